package badgerdir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/mutate"
	"github.com/ledgermedic/ledgermedic/store"
)

// TestSessionWritesLargeNodes: a session's transactions are small (15% of its
// memtable), yet nodes larger than a transaction are written through the
// mutation engine, as are runs that must be split into several transactions,
// and they read back the same from a read-only open.
func TestSessionWritesLargeNodes(t *testing.T) {
	dir := t.TempDir()
	d, err := datadir.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	big := func(seed byte, n int) []byte { return bytes.Repeat([]byte{seed, seed + 1, seed + 2}, n/3) }
	want := map[string][]byte{
		"/big/a": big(1, 1536<<10), // 1.5 MB
		"/big/b": big(4, 1100<<10),
	}
	for i := range 8 { // 1.6 MB of 200 kB nodes: more than one transaction holds
		want[fmt.Sprintf("/mid/%d", i)] = big(byte(10+i), 200<<10)
	}

	d, err = datadir.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The limit is what the test relies on: two 200 kB nodes do not fit in one
	// transaction of a session.
	_, err = d.Metadata.(store.NodeBatcher).CompareAndSetNodes([]store.NodeWrite{
		{Path: "/probe/1", Value: big(1, 200<<10)}, {Path: "/probe/2", Value: big(2, 200<<10)},
	})
	if !errors.Is(err, store.ErrBatchTooBig) {
		t.Fatalf("two 200 kB nodes in one transaction: %v, want ErrBatchTooBig", err)
	}
	e, err := mutate.New(d)
	if err != nil {
		t.Fatal(err)
	}
	plan := &mutate.Plan{Command: "test large nodes"}
	for path, v := range want {
		plan.Items = append(plan.Items, mutate.Item{Kind: mutate.KindCreate, Path: path, After: v})
	}
	res, err := e.Apply(context.Background(), plan, mutate.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.State != mutate.StateCommitted || !res.Verified {
		t.Fatalf("run %s, verified %v: %v", res.State, res.Verified, res.Mismatches)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = datadir.Open(dir, store.Options{ReadOnly: true, NoSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for path, v := range want {
		n, err := d.Metadata.Get(path)
		if err != nil || !bytes.Equal(n.Value, v) {
			t.Errorf("%s: %v, %d bytes, want %d", path, err, len(n.Value), len(v))
		}
	}
}
