package store

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseMetadataURL(t *testing.T) {
	cases := []struct {
		in     string
		scheme string
		hosts  []string
		chroot string
		paths  []string
		str    string
	}{
		{"zk://h1:2181,h2:2182/pulsar", SchemeZK, []string{"h1:2181", "h2:2182"}, "/pulsar", nil, "zk://h1:2181,h2:2182/pulsar"},
		{"zk:h1:2181,h2:2181/chroot/", SchemeZK, []string{"h1:2181", "h2:2181"}, "/chroot", nil, "zk://h1:2181,h2:2181/chroot"},
		{"zk://zk1", SchemeZK, []string{"zk1:2181"}, "", nil, "zk://zk1:2181"},
		{"zk://127.0.0.1:2181?digest=u:secret", SchemeZK, []string{"127.0.0.1:2181"}, "", nil, "zk://127.0.0.1:2181?digest=REDACTED"},
		{"etcd://h1:2379,h2:2379", SchemeEtcd, []string{"http://h1:2379", "http://h2:2379"}, "", nil, "etcd://h1:2379,h2:2379"},
		{"etcd:http://h1:2379,http://h2:2379", SchemeEtcd, []string{"http://h1:2379", "http://h2:2379"}, "", nil, "etcd://h1:2379,h2:2379"},
		{"etcd:https://h1:2379", SchemeEtcd, []string{"https://h1:2379"}, "", nil, "etcd:https://h1:2379"},
		{"etcd://h1:2379?user=root&password=pw", SchemeEtcd, []string{"http://h1:2379"}, "", nil, "etcd://h1:2379?password=REDACTED&user=root"},
		{"zk-data:/var/lib/zookeeper", SchemeZKData, nil, "", []string{"/var/lib/zookeeper"}, "zk-data:/var/lib/zookeeper"},
		{"zk-data:///var/lib/zookeeper/version-2/", SchemeZKData, nil, "", []string{"/var/lib/zookeeper/version-2"}, "zk-data:/var/lib/zookeeper/version-2"},
		{"zk-data:rel/dir", SchemeZKData, nil, "", []string{"rel/dir"}, "zk-data:rel/dir"},
		{"etcd-db:/data/member/snap/db", SchemeEtcdDB, nil, "", []string{"/data/member/snap/db"}, "etcd-db:/data/member/snap/db"},
	}
	for _, c := range cases {
		u, err := ParseMetadataURL(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if u.Scheme != c.scheme || !reflect.DeepEqual(u.Hosts, c.hosts) || u.Chroot != c.chroot || !reflect.DeepEqual(u.Paths, c.paths) {
			t.Errorf("%s: got %+v", c.in, u)
		}
		if got := u.String(); got != c.str {
			t.Errorf("%s: String() = %q, want %q", c.in, got, c.str)
		}
		// What String prints parses back to the same store (secrets aside).
		if !strings.Contains(c.str, "REDACTED") {
			again, err := ParseMetadataURL(u.String())
			if err != nil || again.String() != u.String() {
				t.Errorf("%s: String() %q does not parse back (%v)", c.in, u.String(), err)
			}
		}
	}
}

func TestParseURLRefusals(t *testing.T) {
	for _, in := range []string{"", "zk", "zk:", "zk://", "zk://,h2", "mysql://h", "etcd://", "etcd://:::", "bookie:/b1",
		"zk-data", "etcd:http://"} {
		if _, err := ParseMetadataURL(in); !errors.Is(err, ErrBadURL) {
			t.Errorf("ParseMetadataURL(%q) = %v, want ErrBadURL", in, err)
		}
	}
	for _, in := range []string{"", "zk://h", "bookie:", "bookie:/a,/b", "bookie:/a,bookie:", "badger:/x"} {
		if _, err := ParseLedgersURL(in); !errors.Is(err, ErrBadURL) {
			t.Errorf("ParseLedgersURL(%q) = %v, want ErrBadURL", in, err)
		}
	}
}

func TestParseLedgersURL(t *testing.T) {
	u, err := ParseLedgersURL("bookie:/b1,bookie:/b2/")
	if err != nil || u.Scheme != SchemeBookie || !reflect.DeepEqual(u.Paths, []string{"/b1", "/b2"}) {
		t.Fatalf("got %+v, %v", u, err)
	}
	if u.String() != "bookie:/b1,bookie:/b2" || !u.Offline() || u.Writable() {
		t.Fatalf("String %q offline %v writable %v", u.String(), u.Offline(), u.Writable())
	}
}

func TestWritableSchemes(t *testing.T) {
	for scheme, writable := range map[string]bool{"zk://h": true, "etcd://h:1": true, "zk-data:/d": false, "etcd-db:/d": false} {
		u, err := ParseMetadataURL(scheme)
		if err != nil || u.Writable() != writable || u.Offline() == writable {
			t.Errorf("%s: writable %v offline %v (%v)", scheme, u.Writable(), u.Offline(), err)
		}
	}
}

// FuzzParseMetadataURL: no input panics, every accepted URL names a known
// scheme, and what String prints parses back to the same store.
func FuzzParseMetadataURL(f *testing.F) {
	for _, s := range []string{"zk://h1:2181,h2/c", "zk:h:1/x", "etcd://a:1,b:2", "etcd:https://a:1", "zk-data:/d",
		"etcd-db:/x/db", "zk://h?digest=a:b", "etcd://h?%zz", "zk:///"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseMetadataURL(s)
		if err != nil {
			if !errors.Is(err, ErrBadURL) {
				t.Fatalf("%q: error %v is not ErrBadURL", s, err)
			}
			return
		}
		switch u.Scheme {
		case SchemeZK, SchemeEtcd:
			if len(u.Hosts) == 0 {
				t.Fatalf("%q: live store with no hosts", s)
			}
		case SchemeZKData, SchemeEtcdDB:
			if len(u.Paths) != 1 {
				t.Fatalf("%q: offline store paths %v", s, u.Paths)
			}
		default:
			t.Fatalf("%q: scheme %q accepted", s, u.Scheme)
		}
		if len(u.Query) == 0 {
			again, err := ParseMetadataURL(u.String())
			if err != nil || again.Scheme != u.Scheme || !reflect.DeepEqual(again.Hosts, u.Hosts) || again.Chroot != u.Chroot {
				t.Fatalf("%q → %q → %+v, %v", s, u.String(), again, err)
			}
		}
	})
}

// Live is true exactly for the stores brokers read as we write them.
func TestSourceLive(t *testing.T) {
	for kind, want := range map[string]bool{
		SchemeZK: true, SchemeEtcd: true,
		SchemeZKData: false, SchemeEtcdDB: false, SchemeBookie: false, "badger": false,
	} {
		if got := (SourceInfo{Kind: kind}).Live(); got != want {
			t.Errorf("%s: Live = %v, want %v", kind, got, want)
		}
	}
}

// TestWithChroot: the URL a suggestion prints, for each form that has a chroot.
func TestWithChroot(t *testing.T) {
	cases := []struct{ url, chroot, want string }{
		{"zk://h1:2181,h2:2181", "/pulsar", "zk://h1:2181,h2:2181/pulsar"},
		{"zk:h1:2181/wrong", "/pulsar", "zk://h1:2181/pulsar"},
		{"zk://h1:2181/pulsar", "/", "zk://h1:2181"},
		{"zk-data:/var/zk", "/pulsar", "zk-data:/var/zk?chroot=/pulsar"},
		{"zk-data:/var/zk?chroot=/x&logdir=/l", "/a/b", "zk-data:/var/zk?logdir=%2Fl&chroot=/a/b"},
	}
	for _, c := range cases {
		u, err := ParseMetadataURL(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := u.WithChrootString(c.chroot); got != c.want {
			t.Errorf("%s with chroot %s = %s, want %s", c.url, c.chroot, got, c.want)
		}
	}
}
