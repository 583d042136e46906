package store

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// Store URL schemes (--metadata, --ledgers). Pulsar's own metadataStoreUrl forms
// ("zk:h1:2181/chroot", "etcd:http://h1:2379,http://h2:2379") are accepted too, so
// the value in broker.conf can be pasted.
const (
	SchemeZK     = "zk"      // a live ZooKeeper ensemble
	SchemeZKData = "zk-data" // a ZooKeeper dataDir (or its version-2/), offline
	SchemeEtcd   = "etcd"    // a live etcd cluster
	SchemeEtcdDB = "etcd-db" // an etcd member/snap/db file (or the member dir above it), offline
	SchemeBookie = "bookie"  // bookie dirs (journal/ and ledgers/), offline
	SchemeBK     = "bk"      // live bookies: bk: (ledger metadata in --metadata) or bk:<metadataServiceUri>
)

// ErrBadURL: a store URL that cannot be parsed or names an unknown scheme.
var ErrBadURL = errors.New("bad store URL")

// URL is a parsed store URL.
type URL struct {
	Raw    string
	Scheme string
	// Hosts: zk "host:port"; etcd endpoint URLs ("http://host:port").
	Hosts []string
	// Chroot: zk only; "" or an absolute path such as "/pulsar".
	Chroot string
	// Paths: the file or dir of zk-data and etcd-db (one); bookie: one per bookie.
	Paths []string
	// Meta: bk:<metadataServiceUri> only: the store holding the ledger metadata
	// (nil: the --metadata store). Chroot is then the ledgers root ("": /ledgers).
	Meta *URL
	// Query holds backend options given in the URL (?digest=u:p&timeout=5s, TLS files ...).
	Query url.Values
}

// Offline reports whether the URL names files rather than a live server. Offline
// stores are read-only: ledgermedic never writes another program's files.
func (u URL) Offline() bool {
	return u.Scheme == SchemeZKData || u.Scheme == SchemeEtcdDB || u.Scheme == SchemeBookie
}

// Writable reports whether ledgermedic can write through this store.
func (u URL) Writable() bool { return liveScheme(u.Scheme) }

// liveScheme: the scheme names a live server (ZooKeeper or etcd), which brokers
// read and ledgermedic can write through.
func liveScheme(scheme string) bool { return scheme == SchemeZK || scheme == SchemeEtcd }

// String is the URL with any secret in it replaced, for output and journals.
func (u URL) String() string {
	q := url.Values{}
	for k, v := range u.Query {
		if isSecretParam(k) {
			q[k] = []string{"REDACTED"}
		} else {
			q[k] = v
		}
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	switch u.Scheme {
	case SchemeZK:
		b.WriteString("://" + strings.Join(u.Hosts, ",") + u.Chroot)
	case SchemeEtcd:
		// etcd://h:p when every endpoint is plain http; Pulsar's etcd:URL,URL form otherwise.
		hosts := make([]string, len(u.Hosts))
		plain := true
		for i, h := range u.Hosts {
			hosts[i] = strings.TrimPrefix(h, "http://")
			plain = plain && hosts[i] != h
		}
		if plain {
			b.WriteString("://" + strings.Join(hosts, ","))
		} else {
			b.WriteString(":" + strings.Join(u.Hosts, ","))
		}
	case SchemeBK:
		return SchemeBK + ":" + strings.TrimPrefix(u.Raw, SchemeBK+":")
	case SchemeBookie:
		parts := make([]string, len(u.Paths))
		for i, p := range u.Paths {
			parts[i] = SchemeBookie + ":" + p
		}
		return strings.Join(parts, ",")
	default:
		b.WriteString(":" + strings.Join(u.Paths, ","))
	}
	if len(q) > 0 {
		b.WriteString("?" + q.Encode())
	}
	return b.String()
}

func isSecretParam(k string) bool {
	k = strings.ToLower(k)
	return k == "digest" || k == "password" || strings.Contains(k, "secret")
}

// ParseMetadataURL parses a --metadata value.
func ParseMetadataURL(s string) (URL, error) {
	u, err := parseURL(s)
	if err != nil {
		return URL{}, err
	}
	if u.Scheme == SchemeBookie {
		return URL{}, fmt.Errorf("%w %q: bookie: is a ledger store (use --ledgers)", ErrBadURL, s)
	}
	return u, nil
}

// ParseLedgersURL parses a --ledgers value: one or more bookie:DIR separated by
// commas (bookie:/b1,bookie:/b2), or bk:[metadataServiceUri].
func ParseLedgersURL(s string) (URL, error) {
	if rest, ok := strings.CutPrefix(s, SchemeBK+":"); ok {
		return parseBK(s, rest)
	}
	if strings.HasPrefix(s, SchemeBookie+":") {
		u := URL{Raw: s, Scheme: SchemeBookie, Query: url.Values{}}
		for _, part := range strings.Split(s, ",") {
			p, ok := strings.CutPrefix(part, SchemeBookie+":")
			if !ok || p == "" {
				return URL{}, fmt.Errorf("%w %q: each comma-separated part must be bookie:DIR", ErrBadURL, s)
			}
			u.Paths = append(u.Paths, filepath.Clean(p))
		}
		return u, nil
	}
	return URL{}, fmt.Errorf("%w %q: a ledger store is bookie:DIR[,bookie:DIR...] or bk:[metadataServiceUri] (without --ledgers: the data dir's own)", ErrBadURL, s)
}

// parseBK parses bk: (the ledger metadata is in the --metadata store) and
// bk:<metadataServiceUri> as bookkeeper.conf spells it: zk+hierarchical://h1:2181;h2:2181/ledgers
// (any ledger manager after "zk+", hosts separated by ; or ,) or Pulsar's
// metadata-store:zk:h1:2181/ledgers; the path is the ledgers root.
func parseBK(raw, rest string) (URL, error) {
	u := URL{Raw: raw, Scheme: SchemeBK, Query: url.Values{}}
	if rest == "" {
		return u, nil
	}
	bad := func(why string) (URL, error) { return URL{}, fmt.Errorf("%w %q: %s", ErrBadURL, raw, why) }
	var meta string
	switch scheme, body, _ := strings.Cut(rest, ":"); {
	case scheme == "zk" || strings.HasPrefix(scheme, "zk+"):
		if !strings.HasPrefix(body, "//") {
			return bad("want zk+hierarchical://HOST:PORT[;HOST:PORT]/ROOT")
		}
		meta = SchemeZK + ":" + strings.ReplaceAll(body, ";", ",")
	case scheme == "metadata-store":
		meta = strings.ReplaceAll(body, ";", ",")
	default:
		return bad("want bk: or bk:zk+hierarchical://HOST:PORT/ledgers or bk:metadata-store:zk:HOST:PORT/ledgers")
	}
	m, err := parseURL(meta)
	if err != nil {
		return bad(err.Error())
	}
	if m.Scheme != SchemeZK {
		return bad("the ledger metadata must be in ZooKeeper (" + m.Scheme + " is not supported here)")
	}
	u.Chroot, m.Chroot, m.Raw = m.Chroot, "", SchemeZK+"://"+strings.Join(m.Hosts, ",")
	u.Meta = &m
	return u, nil
}

func parseURL(s string) (URL, error) {
	bad := func(why string) (URL, error) { return URL{}, fmt.Errorf("%w %q: %s", ErrBadURL, s, why) }
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || rest == "" {
		return bad("want SCHEME:..., one of zk://, zk:, zk-data:, etcd://, etcd:, etcd-db:")
	}
	u := URL{Raw: s, Scheme: scheme, Query: url.Values{}}
	if body, query, ok := strings.Cut(rest, "?"); ok {
		q, err := url.ParseQuery(query)
		if err != nil {
			return bad("query: " + err.Error())
		}
		u.Query, rest = q, body
	}
	switch scheme {
	case SchemeZK:
		// zk://h1:2181,h2:2181/chroot or Pulsar's zk:h1:2181,h2:2181/chroot
		rest = strings.TrimPrefix(rest, "//")
		hosts, chroot, _ := strings.Cut(rest, "/")
		if c := path.Clean("/" + chroot); c != "/" {
			u.Chroot = c
		}
		for _, h := range strings.Split(hosts, ",") {
			if h == "" {
				return bad("empty host")
			}
			if !strings.Contains(h, ":") {
				h += ":2181"
			}
			u.Hosts = append(u.Hosts, h)
		}
	case SchemeEtcd:
		// etcd://h1:2379,h2:2379 or Pulsar's etcd:http://h1:2379,http://h2:2379
		rest = strings.TrimPrefix(rest, "//")
		for _, h := range strings.Split(rest, ",") {
			h = strings.TrimSuffix(h, "/")
			if h == "" {
				return bad("empty endpoint")
			}
			if !strings.Contains(h, "://") {
				if strings.Contains(h, "/") {
					return bad("endpoint " + h + " is not host:port or http(s)://host:port")
				}
				h = "http://" + h
			}
			hp, err := url.Parse(h)
			if err != nil || hp.Hostname() == "" || hp.Scheme != "http" && hp.Scheme != "https" || hp.Path != "" {
				return bad("endpoint " + h + " is not host:port or http(s)://host:port")
			}
			u.Hosts = append(u.Hosts, h)
		}
	case SchemeZKData, SchemeEtcdDB:
		p := strings.TrimPrefix(rest, "//")
		if strings.HasPrefix(rest, "//") && !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		u.Paths = []string{filepath.Clean(p)}
	default:
		return bad("unknown scheme " + scheme)
	}
	return u, nil
}

// ChrootPath is the chroot the URL gives ("" for none): zk's path after the hosts,
// zk-data's ?chroot=.
func (u URL) ChrootPath() string {
	switch u.Scheme {
	case SchemeZK:
		return u.Chroot
	case SchemeZKData:
		if c := strings.TrimSuffix(u.Query.Get("chroot"), "/"); c != "" {
			return c
		}
	}
	return ""
}

// HasChroot reports whether the scheme can root its paths at a chroot. Pulsar's
// etcd store keeps every key at the root (formats.md §9.4), and a data dir's
// paths are the cluster's as imported.
func (u URL) HasChroot() bool { return u.Scheme == SchemeZK || u.Scheme == SchemeZKData }

// WithChroot is u rooted at chroot ("" or "/": the server's root).
func (u URL) WithChroot(chroot string) URL {
	if chroot == "/" {
		chroot = ""
	}
	switch u.Scheme {
	case SchemeZK:
		u.Chroot = chroot
	case SchemeZKData:
		q := url.Values{}
		for k, v := range u.Query {
			q[k] = v
		}
		if q.Del("chroot"); chroot != "" {
			q.Set("chroot", chroot)
		}
		u.Query = q
	}
	return u
}

// WithChrootString is withChroot as the user would type it: zk-data's ?chroot=
// unescaped.
func (u URL) WithChrootString(chroot string) string {
	if u.Scheme != SchemeZKData || chroot == "" || chroot == "/" {
		return u.WithChroot(chroot).String()
	}
	s := u.WithChroot("").String()
	sep := "?"
	if strings.Contains(s, "?") {
		sep = "&"
	}
	return s + sep + "chroot=" + chroot
}
