package bookkeeper

import (
	"errors"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

func TestParseBKURL(t *testing.T) {
	for _, tc := range []struct {
		in, meta, root, str string
	}{
		{"bk:", "", "", "bk:"},
		{"bk:zk+hierarchical://zk1:2181;zk2:2181/ledgers", "zk://zk1:2181,zk2:2181", "/ledgers", "bk:zk+hierarchical://zk1:2181;zk2:2181/ledgers"},
		{"bk:zk+null://zk1/bk/ledgers", "zk://zk1:2181", "/bk/ledgers", "bk:zk+null://zk1/bk/ledgers"},
		{"bk:metadata-store:zk:zk1:2181/ledgers", "zk://zk1:2181", "/ledgers", "bk:metadata-store:zk:zk1:2181/ledgers"},
		{"bk:zk://zk1:2181", "zk://zk1:2181", "", "bk:zk://zk1:2181"},
	} {
		u, err := store.ParseLedgersURL(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		meta := ""
		if u.Meta != nil {
			meta = u.Meta.String()
		}
		if u.Scheme != store.SchemeBK || meta != tc.meta || u.Chroot != tc.root || u.String() != tc.str || u.Writable() || u.Offline() {
			t.Errorf("%s: scheme %s meta %q root %q string %q writable %v", tc.in, u.Scheme, meta, u.Chroot, u.String(), u.Writable())
		}
	}
	for _, bad := range []string{"bk:zk+hierarchical:zk1", "bk:etcd://e1:2379", "bk:metadata-store:etcd:http://e1:2379", "bk:foo", "bk:zk+hierarchical://,/x"} {
		if _, err := store.ParseLedgersURL(bad); !errors.Is(err, store.ErrBadURL) {
			t.Errorf("%s: %v, want ErrBadURL", bad, err)
		}
	}
}

// TestBKNeedsMetadata: bare bk: without a metadata store is bad usage, not a panic.
func TestBKNeedsMetadata(t *testing.T) {
	u, _ := store.ParseLedgersURL("bk:")
	if _, err := Open(u, nil, store.Options{ReadOnly: true}); !errors.Is(err, store.ErrBadURL) {
		t.Fatalf("bk: without metadata: %v", err)
	}
}
