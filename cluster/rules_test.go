package cluster

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/mlpb"
	"github.com/ledgermedic/ledgermedic/formats/schemapb"
)

func li(id, entries int64, props ...string) *mlpb.ManagedLedgerInfo_LedgerInfo {
	l := &mlpb.ManagedLedgerInfo_LedgerInfo{LedgerId: proto.Int64(id), Entries: proto.Int64(entries)}
	for i := 0; i+1 < len(props); i += 2 {
		formats.SetLedgerProperty(l, props[i], props[i+1])
	}
	return l
}

// inspect's check called the last ledger open when it had 0 entries; index's
// ledgerRefs also required no terminatedPosition. A terminated managed ledger
// keeps its last LedgerInfo at 0 entries (asyncTerminate stores the LedgerInfo as
// created), so its entries must still be counted from the store.
func TestIsOpen(t *testing.T) {
	terminated := &mlpb.NestedPositionInfo{LedgerId: proto.Int64(3), EntryId: proto.Int64(4)}
	cases := []struct {
		name string
		info *mlpb.ManagedLedgerInfo
		i    int
		want bool
	}{
		{"last with 0 entries", &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{li(1, 5), li(3, 0)}}, 1, true},
		{"terminated, last with 0 entries (index used to say closed)", &mlpb.ManagedLedgerInfo{
			LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{li(1, 5), li(3, 0)}, TerminatedPosition: terminated}, 1, true},
		{"last with entries: closed (inactive roll-over, no new ledger yet)", &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{li(1, 5), li(3, 2)}}, 1, false},
		{"not last, 0 entries", &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{li(1, 0), li(3, 2)}}, 0, false},
		{"only ledger, 0 entries", &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{li(1, 0)}}, 0, true},
	}
	for _, c := range cases {
		if got := IsOpen(c.info, c.i); got != c.want {
			t.Errorf("%s: IsOpen = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOffloadedAway(t *testing.T) {
	cases := []struct {
		name  string
		oc    *mlpb.OffloadContext
		away  bool
		state string
	}{
		{"no offload", nil, false, OffloadNone},
		{"in progress", &mlpb.OffloadContext{Complete: proto.Bool(false)}, false, OffloadInProgress},
		{"complete, BookKeeper copy kept", &mlpb.OffloadContext{Complete: proto.Bool(true)}, false, OffloadComplete},
		{"complete and deleted", &mlpb.OffloadContext{Complete: proto.Bool(true), BookkeeperDeleted: proto.Bool(true)}, true, OffloadAway},
		{"deleted flag without complete", &mlpb.OffloadContext{BookkeeperDeleted: proto.Bool(true)}, false, OffloadInProgress},
	}
	for _, c := range cases {
		l := li(1, 3)
		l.OffloadContext = c.oc
		if got := OffloadedAway(l); got != c.away {
			t.Errorf("%s: OffloadedAway = %v, want %v", c.name, got, c.away)
		}
		if got := OffloadState(l); got != c.state {
			t.Errorf("%s: OffloadState = %q, want %q", c.name, got, c.state)
		}
	}
}

// check and inspect topics counted a ledger as covered when the property was
// merely present; back-fill and find took only a non-negative decimal. Covered
// now means a valid value, so check no longer calls a ledger with "abc" covered.
func TestFirstEntryIndexAndCoverage(t *testing.T) {
	cases := []struct {
		name    string
		value   *string
		v       int64
		has, ok bool
		covered int
	}{
		{"absent", nil, 0, false, false, 0},
		{"decimal", proto.String("124"), 124, true, true, 1},
		{"zero", proto.String("0"), 0, true, true, 1},
		{"not a decimal (check used to count it covered)", proto.String("abc"), 0, true, false, 0},
		{"negative", proto.String("-1"), 0, true, false, 0},
		{"empty", proto.String(""), 0, true, false, 0},
	}
	for _, c := range cases {
		l := li(7, 4)
		if c.value != nil {
			formats.SetLedgerProperty(l, "kafka.base.offset", *c.value)
		}
		v, has, ok := FirstEntryIndex(l, "kafka.base.offset")
		if v != c.v || has != c.has || ok != c.ok {
			t.Errorf("%s: FirstEntryIndex = %d, %v, %v; want %d, %v, %v", c.name, v, has, ok, c.v, c.has, c.ok)
		}
		if _, has, _ := FirstEntryIndex(l, ""); has {
			t.Errorf("%s: the default key %s found a value set under another key", c.name, FirstEntryIndexKey)
		}
		info := &mlpb.ManagedLedgerInfo{LedgerInfo: []*mlpb.ManagedLedgerInfo_LedgerInfo{l, li(9, 0)}}
		with, covered := Coverage(info, "kafka.base.offset")
		if with != 1 || covered != c.covered {
			t.Errorf("%s: Coverage = %d/%d, want %d/1", c.name, covered, with, c.covered)
		}
	}
}

// inspect accepted any ledger whose entry 0 has a broker index; back-fill looked
// only at the newest local ledger, so check recommended a back-fill that then
// skipped the topic as not indexed. The rule is now any ledger, newest first.
func TestTopicIndexed(t *testing.T) {
	errRead := errors.New("read failed")
	cases := []struct {
		name    string
		mlIndex bool
		indexed map[int64]bool // entry 0 of these ledgers has a broker index
		failOn  int64
		want    Indexed
		asked   []int64
		err     bool
	}{
		{"ML property: no entry read", true, nil, 0, IndexedByProperty, nil, false},
		{"newest ledger indexed", false, map[int64]bool{30: true}, 0, IndexedByEntry, []int64{30}, false},
		{"interceptor turned off before the newest ledger (back-fill said not indexed)", false, map[int64]bool{10: true}, 0, IndexedByEntry, []int64{30, 20, 10}, false},
		{"no ledger indexed", false, nil, 0, NotIndexed, []int64{30, 20, 10}, false},
		{"read error is an error, not a no", false, nil, 20, NotIndexed, []int64{30, 20}, true},
	}
	for _, c := range cases {
		var asked []int64
		got, err := TopicIndexed(c.mlIndex, []int64{10, 20, 30}, func(id int64) (bool, error) {
			asked = append(asked, id)
			if id == c.failOn {
				return false, errRead
			}
			return c.indexed[id], nil
		})
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s: TopicIndexed = %v, %v; want %v (error %v)", c.name, got, err, c.want, c.err)
		}
		if len(asked) != len(c.asked) {
			t.Errorf("%s: asked %v, want %v", c.name, asked, c.asked)
			continue
		}
		for i := range asked {
			if asked[i] != c.asked[i] {
				t.Errorf("%s: asked %v, want %v", c.name, asked, c.asked)
				break
			}
		}
	}
}

// inspect schemas printed the stored enum's KEYVALUE where schema capture wrote
// Pulsar's KEY_VALUE for the same schema.
func TestSchemaTypeNames(t *testing.T) {
	cases := []struct {
		t    schemapb.SchemaInfo_SchemaType
		name string
	}{
		{schemapb.SchemaInfo_KEYVALUE, "KEY_VALUE"},
		{schemapb.SchemaInfo_PROTOBUFNATIVE, "PROTOBUF_NATIVE"},
		{schemapb.SchemaInfo_LOCALDATETIME, "LOCAL_DATE_TIME"},
		{schemapb.SchemaInfo_AVRO, "AVRO"},
		{schemapb.SchemaInfo_NONE, "NONE"},
		{schemapb.SchemaInfo_SchemaType(99), "TYPE_99"},
	}
	for _, c := range cases {
		if got := SchemaTypeName(c.t); got != c.name {
			t.Errorf("SchemaTypeName(%d) = %q, want %q", c.t, got, c.name)
		}
		if got, err := ParseSchemaType(c.name); err != nil || got != c.t {
			t.Errorf("ParseSchemaType(%q) = %v, %v; want %v", c.name, got, err, c.t)
		}
	}
	for in, want := range map[string]schemapb.SchemaInfo_SchemaType{
		"KEYVALUE": schemapb.SchemaInfo_KEYVALUE, "key_value": schemapb.SchemaInfo_KEYVALUE,
		" Avro ": schemapb.SchemaInfo_AVRO, "BYTES": schemapb.SchemaInfo_NONE, "PROTOBUFNATIVE": schemapb.SchemaInfo_PROTOBUFNATIVE,
	} {
		if got, err := ParseSchemaType(in); err != nil || got != want {
			t.Errorf("ParseSchemaType(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "KEY VALUE", "TYPE_x", "XML"} {
		if _, err := ParseSchemaType(bad); err == nil {
			t.Errorf("ParseSchemaType(%q): no error", bad)
		}
	}
	// Every stored enum value has a name of Pulsar's, and none is shown bare.
	for v, enum := range schemapb.SchemaInfo_SchemaType_name {
		name := SchemaTypeName(schemapb.SchemaInfo_SchemaType(v))
		if len(name) > 5 && name[:5] == "TYPE_" {
			t.Errorf("stored type %s (%d) has no Pulsar name", enum, v)
		}
	}
}

func TestPosition(t *testing.T) {
	a, b := Position{LedgerID: 3, EntryID: 9}, Position{LedgerID: 4, EntryID: 0}
	if !a.Less(b) || b.Less(a) || a.Less(a) || a.String() != "3:9" {
		t.Errorf("Position: %v < %v = %v, String %q", a, b, a.Less(b), a.String())
	}
}
