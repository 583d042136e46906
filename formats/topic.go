package formats

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Topic domains.
const (
	DomainPersistent    = "persistent"
	DomainNonPersistent = "non-persistent"
)

// Metadata roots for managed ledgers, schema locators and the admin tree
// (clusters, tenants, namespace policies).
const (
	ManagedLedgersRoot = "/managed-ledgers"
	SchemasRoot        = "/schemas"
	AdminRoot          = "/admin"
)

// partitionSuffix separates a partitioned topic from its partition index.
const partitionSuffix = "-partition-"

// TopicName is a V2 Pulsar topic name, domain://tenant/namespace/local.
// LocalName is the decoded (user-facing) name; paths use its encoded form.
// Legacy names with a cluster segment are not supported.
type TopicName struct {
	Domain    string // persistent or non-persistent
	Tenant    string
	Namespace string
	LocalName string
}

// ParseTopic reads "persistent://t/ns/topic", "non-persistent://t/ns/topic",
// "t/ns/topic" (persistent) or "topic" (persistent://public/default/topic),
// as Pulsar's TopicName does. Callers decide whether non-persistent is useful.
func ParseTopic(s string) (TopicName, error) {
	var t TopicName
	domain, rest, ok := strings.Cut(s, "://")
	if ok {
		if domain != DomainPersistent && domain != DomainNonPersistent {
			return t, fmt.Errorf("topic %q: unknown domain %q: %w", s, domain, ErrBadTopicName)
		}
	} else {
		domain, rest = DomainPersistent, s
		// Pulsar's short form splits on '/' dropping empty pieces.
		var pieces []string
		for _, p := range strings.Split(s, "/") {
			if p != "" {
				pieces = append(pieces, p)
			}
		}
		switch len(pieces) {
		case 1:
			rest = "public/default/" + pieces[0]
		case 3:
			rest = strings.Join(pieces, "/")
		default:
			return t, fmt.Errorf("topic %q: want <tenant>/<namespace>/<topic> or <topic>: %w", s, ErrBadTopicName)
		}
	}
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) != 3 {
		return t, fmt.Errorf("topic %q: want %s://<tenant>/<namespace>/<topic> (legacy cluster names are not supported): %w",
			s, domain, ErrBadTopicName)
	}
	t = TopicName{Domain: domain, Tenant: parts[0], Namespace: parts[1], LocalName: parts[2]}
	if err := t.validate(); err != nil {
		return TopicName{}, fmt.Errorf("topic %q: %w", s, err)
	}
	return t, nil
}

// validate applies Pulsar's rules: tenant and namespace match [-=:.\w]+ and
// the local name is not empty.
func (t TopicName) validate() error {
	if !validNamePart(t.Tenant) {
		return fmt.Errorf("tenant %q: want letters, digits and -=:._: %w", t.Tenant, ErrBadTopicName)
	}
	if !validNamePart(t.Namespace) {
		return fmt.Errorf("namespace %q: want letters, digits and -=:._: %w", t.Namespace, ErrBadTopicName)
	}
	if t.LocalName == "" {
		return fmt.Errorf("empty topic name: %w", ErrBadTopicName)
	}
	return nil
}

func validNamePart(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '=' || c == ':' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// String returns the complete name, e.g. persistent://public/default/orders.
func (t TopicName) String() string {
	return t.Domain + "://" + t.Tenant + "/" + t.Namespace + "/" + t.LocalName
}

// ManagedLedgerName is the topic's persistence name,
// tenant/namespace/domain/<encoded local name>.
func (t TopicName) ManagedLedgerName() string {
	return t.Tenant + "/" + t.Namespace + "/" + t.Domain + "/" + EncodeTopicLocalName(t.LocalName)
}

// ManagedLedgerPath is the metadata node holding the topic's ManagedLedgerInfo.
func (t TopicName) ManagedLedgerPath() string {
	return ManagedLedgersRoot + "/" + t.ManagedLedgerName()
}

// SchemaKey is the schema id Pulsar uses for the topic (TopicName.getSchemaName):
// tenant/namespace/<encoded base local name>. It is the SchemaInfo.schema_id
// and the pulsar/schemaId ledger property. Domain and partition do not count:
// all partitions, persistent or not, share one schema.
func (t TopicName) SchemaKey() string {
	return t.Tenant + "/" + t.Namespace + "/" + EncodeTopicLocalName(t.Base().LocalName)
}

// SchemaLocatorPath is the metadata node holding the topic's SchemaLocator.
func (t TopicName) SchemaLocatorPath() string {
	return SchemasRoot + "/" + t.SchemaKey()
}

// PartitionIndex returns the partition number of a "<topic>-partition-<i>"
// name, or -1. Like Pulsar, the index must be a canonical non-negative int32.
func (t TopicName) PartitionIndex() int {
	i := strings.LastIndex(t.LocalName, partitionSuffix)
	if i < 0 {
		return -1
	}
	s := t.LocalName[i+len(partitionSuffix):]
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != s {
		return -1
	}
	return int(n)
}

// Partition returns partition i of the topic's base name.
func (t TopicName) Partition(i int) TopicName {
	b := t.Base()
	b.LocalName += partitionSuffix + strconv.Itoa(i)
	return b
}

// Base strips a -partition-N suffix; other names are returned unchanged.
func (t TopicName) Base() TopicName {
	if t.PartitionIndex() < 0 {
		return t
	}
	t.LocalName = t.LocalName[:strings.LastIndex(t.LocalName, partitionSuffix)]
	return t
}

// EncodeTopicLocalName encodes a local topic name as Java's
// URLEncoder.encode(s, "UTF-8"): a-z A-Z 0-9 . - * _ are kept, space becomes
// '+', every other byte of the UTF-8 form becomes %XX (upper-case hex).
// url.QueryEscape differs: it escapes '*' and keeps '~'.
func EncodeTopicLocalName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '.', c == '-', c == '*', c == '_':
			b.WriteByte(c)
		case c == ' ':
			b.WriteByte('+')
		default:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xf])
		}
	}
	return b.String()
}

// DecodeTopicLocalName is Java's URLDecoder.decode(s, "UTF-8"): '+' is a
// space, %XX a byte (either hex case); other characters stand for themselves.
// A malformed escape or a result that is not UTF-8 is an error.
func DecodeTopicLocalName(s string) (string, error) {
	if !strings.ContainsAny(s, "+%") {
		if !utf8.ValidString(s) {
			return "", fmt.Errorf("encoded topic name %q is not UTF-8: %w", s, ErrBadTopicName)
		}
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '+':
			b.WriteByte(' ')
		case '%':
			if i+2 >= len(s) {
				return "", fmt.Errorf("encoded topic name %q: offset %d: incomplete %%-escape: %w", s, i, ErrBadTopicName)
			}
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if !ok1 || !ok2 {
				return "", fmt.Errorf("encoded topic name %q: offset %d: bad %%-escape %q: %w", s, i, s[i:i+3], ErrBadTopicName)
			}
			b.WriteByte(hi<<4 | lo)
			i += 2
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	if !utf8.ValidString(out) {
		return "", fmt.Errorf("encoded topic name %q decodes to invalid UTF-8: %w", s, ErrBadTopicName)
	}
	return out, nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// ParseManagedLedgerPath reads /managed-ledgers/<tenant>/<ns>/persistent/<encoded>.
// Cursor nodes (one more segment) and intermediate nodes are rejected, and so
// is a path that is not the canonical encoding of its topic (a broker would
// never have written it).
func ParseManagedLedgerPath(p string) (TopicName, bool) {
	parts, ok := splitUnder(p, ManagedLedgersRoot, 4)
	if !ok {
		return TopicName{}, false
	}
	canonical := TopicName.ManagedLedgerPath
	if encodesToItself(parts[3]) {
		// The path is made of the name's own parts, and a name of bytes that
		// encode as themselves decodes to itself: the path is canonical, so it
		// need not be built again to compare.
		canonical = func(TopicName) string { return p }
	}
	return topicFromPath(p, parts[0], parts[1], parts[2], parts[3], canonical)
}

// encodesToItself reports whether EncodeTopicLocalName keeps every byte of s.
func encodesToItself(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '*', c == '_':
		default:
			return false
		}
	}
	return true
}

// ParseCursorPath reads /managed-ledgers/<ml name>/<cursor>, returning the
// topic and the cursor name as stored (Pulsar stores subscription names
// encoded like topic names; DecodeTopicLocalName gives the subscription).
func ParseCursorPath(p string) (TopicName, string, bool) {
	parts, ok := splitUnder(p, ManagedLedgersRoot, 5)
	if !ok {
		return TopicName{}, "", false
	}
	cursor := parts[4]
	t, ok := topicFromPath(strings.TrimSuffix(p, "/"+cursor), parts[0], parts[1], parts[2], parts[3], TopicName.ManagedLedgerPath)
	if !ok {
		return TopicName{}, "", false
	}
	return t, cursor, true
}

// ParseSchemaLocatorPath reads /schemas/<tenant>/<ns>/<encoded base topic>.
// The returned topic is persistent (schemas carry no domain).
func ParseSchemaLocatorPath(p string) (TopicName, bool) {
	parts, ok := splitUnder(p, SchemasRoot, 3)
	if !ok {
		return TopicName{}, false
	}
	return topicFromPath(p, parts[0], parts[1], DomainPersistent, parts[2], TopicName.SchemaLocatorPath)
}

// splitUnder splits the path below root into exactly n (at most 5) non-empty
// segments, without allocating: it runs once per node of every walk.
func splitUnder(p, root string, n int) ([5]string, bool) {
	var parts [5]string
	rest, ok := strings.CutPrefix(p, root+"/")
	if !ok {
		return parts, false
	}
	for i := range n {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "" || more != (i < n-1) {
			return parts, false
		}
		parts[i], rest = seg, tail
	}
	return parts, true
}

func topicFromPath(p, tenant, ns, domain, encoded string, canonical func(TopicName) string) (TopicName, bool) {
	if domain != DomainPersistent {
		return TopicName{}, false
	}
	local, err := DecodeTopicLocalName(encoded)
	if err != nil {
		return TopicName{}, false
	}
	t := TopicName{Domain: domain, Tenant: tenant, Namespace: ns, LocalName: local}
	if t.validate() != nil || canonical(t) != p {
		return TopicName{}, false
	}
	return t, true
}
