package formats

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// Expected values are what Java's URLEncoder.encode(s, "UTF-8") returns.
var topicEncodingCases = []struct{ plain, encoded string }{
	{"orders", "orders"},
	{"my-topic_1.v2", "my-topic_1.v2"},
	{"a*b", "a*b"},     // kept by Java, escaped by url.QueryEscape
	{"a~b", "a%7Eb"},   // escaped by Java, kept by url.QueryEscape
	{"a b", "a+b"},     // space
	{"100%", "100%25"}, // percent
	{"a+b", "a%2Bb"},   // plus
	{"a/b", "a%2Fb"},   // slash
	{"a:b=c", "a%3Ab%3Dc"},
	{"日本", "%E6%97%A5%E6%9C%AC"},
	{"é", "%C3%A9"},
	{"x\x00y", "x%00y"},
	{"", ""},
}

func TestEncodeTopicLocalName(t *testing.T) {
	for _, tc := range topicEncodingCases {
		if got := EncodeTopicLocalName(tc.plain); got != tc.encoded {
			t.Errorf("EncodeTopicLocalName(%q) = %q, want %q", tc.plain, got, tc.encoded)
		}
		got, err := DecodeTopicLocalName(tc.encoded)
		if err != nil || got != tc.plain {
			t.Errorf("DecodeTopicLocalName(%q) = %q, %v; want %q", tc.encoded, got, err, tc.plain)
		}
	}
}

func TestDecodeTopicLocalName(t *testing.T) {
	for in, want := range map[string]string{
		"a%7eb":     "a~b", // lower-case hex is accepted
		"a+b%20c":   "a b c",
		"~plain*":   "~plain*", // unescaped characters stand for themselves
		"%e6%97%a5": "日",
	} {
		got, err := DecodeTopicLocalName(in)
		if err != nil || got != want {
			t.Errorf("DecodeTopicLocalName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"%", "a%4", "%G1", "%1G", "%C3", "%FF", "\xff"} {
		if got, err := DecodeTopicLocalName(in); err == nil || !errors.Is(err, ErrBadTopicName) {
			t.Errorf("DecodeTopicLocalName(%q) = %q, %v; want ErrBadTopicName", in, got, err)
		}
	}
}

func TestParseTopic(t *testing.T) {
	tests := []struct {
		in   string
		want TopicName
	}{
		{"persistent://public/default/orders", TopicName{"persistent", "public", "default", "orders"}},
		{"non-persistent://t/ns/x", TopicName{"non-persistent", "t", "ns", "x"}},
		{"t/ns/x", TopicName{"persistent", "t", "ns", "x"}},
		{"orders", TopicName{"persistent", "public", "default", "orders"}},
		{"persistent://t/ns/my topic~*", TopicName{"persistent", "t", "ns", "my topic~*"}},
		{"persistent://my-tenant/a.b=c:d/日本", TopicName{"persistent", "my-tenant", "a.b=c:d", "日本"}},
	}
	for _, tc := range tests {
		got, err := ParseTopic(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseTopic(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{
		"", "persistent://", "persistent://t/ns", "persistent://t/ns/", "persistent://t/c/ns/x",
		"http://t/ns/x", "t/ns", "t/c/ns/x", "persistent://t!/ns/x", "persistent:///ns/x",
	} {
		if got, err := ParseTopic(in); err == nil || !errors.Is(err, ErrBadTopicName) {
			t.Errorf("ParseTopic(%q) = %+v, %v; want ErrBadTopicName", in, got, err)
		}
	}
}

func TestTopicPaths(t *testing.T) {
	p, err := ParseTopic("persistent://public/default/my topic~-partition-3")
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct{ name, got, want string }{
		{"String", p.String(), "persistent://public/default/my topic~-partition-3"},
		{"ManagedLedgerName", p.ManagedLedgerName(), "public/default/persistent/my+topic%7E-partition-3"},
		{"ManagedLedgerPath", p.ManagedLedgerPath(), "/managed-ledgers/public/default/persistent/my+topic%7E-partition-3"},
		{"SchemaKey", p.SchemaKey(), "public/default/my+topic%7E"},
		{"SchemaLocatorPath", p.SchemaLocatorPath(), "/schemas/public/default/my+topic%7E"},
		{"Base", p.Base().String(), "persistent://public/default/my topic~"},
		{"Partition", p.Partition(7).String(), "persistent://public/default/my topic~-partition-7"},
		{"Partition of base", p.Base().Partition(0).LocalName, "my topic~-partition-0"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if p.PartitionIndex() != 3 || p.Base().PartitionIndex() != -1 {
		t.Errorf("PartitionIndex = %d, base %d", p.PartitionIndex(), p.Base().PartitionIndex())
	}
}

func TestPartitionIndex(t *testing.T) {
	for local, want := range map[string]int{
		"t":                         -1,
		"t-partition-0":             0,
		"t-partition-12":            12,
		"t-partition-01":            -1, // not canonical, as in Pulsar
		"t-partition--1":            -1,
		"t-partition-+1":            -1,
		"t-partition-":              -1,
		"t-partition-x":             -1,
		"t-partition-2147483648":    -1, // beyond int32
		"a-partition-1-partition-2": 2,
		"t-partition-1-partition-x": -1,
	} {
		tn := TopicName{Domain: DomainPersistent, Tenant: "t", Namespace: "ns", LocalName: local}
		if got := tn.PartitionIndex(); got != want {
			t.Errorf("PartitionIndex(%q) = %d, want %d", local, got, want)
		}
		if want < 0 && tn.Base() != tn {
			t.Errorf("Base(%q) changed a non-partition name", local)
		}
	}
	tn := TopicName{DomainPersistent, "t", "ns", "a-partition-1-partition-2"}
	if got := tn.Base().LocalName; got != "a-partition-1" {
		t.Errorf("Base strips only the last suffix: got %q", got)
	}
}

func TestParseManagedLedgerPath(t *testing.T) {
	want := TopicName{DomainPersistent, "public", "default", "my topic/日本"}
	p := want.ManagedLedgerPath()
	if p != "/managed-ledgers/public/default/persistent/my+topic%2F%E6%97%A5%E6%9C%AC" {
		t.Fatalf("ManagedLedgerPath = %s", p)
	}
	got, ok := ParseManagedLedgerPath(p)
	if !ok || got != want {
		t.Fatalf("ParseManagedLedgerPath(%s) = %+v, %v", p, got, ok)
	}
	if _, ok := ParseManagedLedgerPath(p + "/sub"); ok {
		t.Error("cursor path parsed as a managed ledger")
	}
	tn, cursor, ok := ParseCursorPath(p + "/my+sub")
	if !ok || tn != want || cursor != "my+sub" {
		t.Errorf("ParseCursorPath = %+v %q %v", tn, cursor, ok)
	}
	for _, bad := range []string{
		"/managed-ledgers/public/default/persistent",          // intermediate node
		"/managed-ledgers/public/default",                     // intermediate node
		"/managed-ledgers/public/default/non-persistent/x",    // no such ML
		"/managed-ledgers/public/default/persistent/my topic", // not the canonical encoding
		"/managed-ledgers/public/default/persistent/a%7eb",    // lower-case hex: not canonical
		"/managed-ledgers/public/default/persistent/%ZZ",      // bad escape
		"/managed-ledgers/public/default/persistent/",         // empty name
		"/managed-ledgers/pub!ic/default/persistent/x",        // bad tenant
		"/managed-ledgers/public/default/persistent/x/",       // empty cursor
		"/schemas/public/default/x",                           // other root
	} {
		if tn, ok := ParseManagedLedgerPath(bad); ok {
			t.Errorf("ParseManagedLedgerPath(%q) = %+v, want false", bad, tn)
		}
		if tn, c, ok := ParseCursorPath(bad); ok {
			t.Errorf("ParseCursorPath(%q) = %+v %q, want false", bad, tn, c)
		}
	}
}

func TestParseSchemaLocatorPath(t *testing.T) {
	tn := TopicName{DomainPersistent, "t", "ns", "my topic"}
	p := tn.Partition(2).SchemaLocatorPath()
	if p != "/schemas/t/ns/my+topic" {
		t.Fatalf("SchemaLocatorPath = %s", p)
	}
	got, ok := ParseSchemaLocatorPath(p)
	if !ok || got != tn {
		t.Fatalf("ParseSchemaLocatorPath = %+v, %v", got, ok)
	}
	for _, bad := range []string{"/schemas/t/ns", "/schemas/t/ns/x/y", "/schemas/t/ns/x-partition-1", "/schemas/t/ns/a b"} {
		if got, ok := ParseSchemaLocatorPath(bad); ok {
			t.Errorf("ParseSchemaLocatorPath(%q) = %+v, want false", bad, got)
		}
	}
}

func FuzzDecodeTopicLocalName(f *testing.F) {
	for _, tc := range topicEncodingCases {
		f.Add(tc.encoded)
		f.Add(tc.plain)
	}
	f.Add("%")
	f.Add("%zz")
	f.Fuzz(func(t *testing.T, s string) {
		// Encoding any UTF-8 string must decode back to it.
		if utf8.ValidString(s) {
			back, err := DecodeTopicLocalName(EncodeTopicLocalName(s))
			if err != nil || back != s {
				t.Fatalf("Decode(Encode(%q)) = %q, %v", s, back, err)
			}
		}
		dec, err := DecodeTopicLocalName(s)
		if err != nil {
			return
		}
		enc := EncodeTopicLocalName(dec)
		if strings.ContainsAny(enc, " ~") {
			t.Fatalf("encoded form %q keeps a character Java escapes", enc)
		}
		if again, err := DecodeTopicLocalName(enc); err != nil || again != dec {
			t.Fatalf("re-encoding %q: %q, %v", dec, again, err)
		}
	})
}
