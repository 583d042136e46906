package datadir

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// TestChildNames: the listing made of skipping walks names each child once, in
// the byte order that puts /a-b between /a and /a/x, and stops at its bound.
func TestChildNames(t *testing.T) {
	nodes := map[string]string{
		"/a": "", "/a/x": "", "/a/x/y": "", "/a-b": "", "/a-b/c": "", "/a.c/d/e": "", "/b/deep/er": "", "/c": "",
	}
	for i := range 40 {
		nodes[fmt.Sprintf("/many/k%02d/leaf", i)] = ""
	}
	dir := filledDataDir(t, nodes)
	d, err := Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	cases := []struct {
		parent string
		limit  int
		want   []string
		more   bool
	}{
		{"", 32, []string{"a", "a-b", "a.c", "b", "c", "many"}, false},
		{"", 3, []string{"a", "a-b", "a.c"}, true},
		{"/a", 32, []string{"x"}, false},
		{"/b", 32, []string{"deep"}, false},
		{"/c", 32, nil, false},
		{"/many", 32, nil, true},
		{"/nope", 32, nil, false},
	}
	for _, c := range cases {
		got, more, err := childNames(ctx, d.Metadata, c.parent, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if c.parent == "/many" {
			if len(got) != 32 || !more {
				t.Errorf("childNames(/many, 32) = %d names, more %v: want 32, more", len(got), more)
			}
			continue
		}
		if !slices.Equal(got, c.want) || more != c.more {
			t.Errorf("childNames(%q, %d) = %v, more %v; want %v, more %v", c.parent, c.limit, got, more, c.want, c.more)
		}
	}
}

// TestCheckPulsarRoot: a data dir whose Pulsar nodes sit under a prefix, two
// levels down or beyond the bound, and one with none.
func TestCheckPulsarRoot(t *testing.T) {
	cases := []struct {
		name  string
		nodes map[string]string
		found []string // the chroots named
		empty bool
	}{
		{"at the root", map[string]string{"/schemas/t/ns/x": ""}, nil, false},
		{"one level down", map[string]string{"/pulsar/managed-ledgers/t/ns/persistent/x": "", "/ledgers/L1": ""}, []string{"/pulsar"}, false},
		{"two levels down", map[string]string{"/clusters/east/admin/clusters/east": "", "/clusters/west/schemas/t/ns/x": ""},
			[]string{"/clusters/east", "/clusters/west"}, false},
		{"three levels down", map[string]string{"/a/b/c/admin/x": ""}, nil, false},
		{"empty", nil, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(filledDataDir(t, c.nodes), store.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			err = CheckPulsarRoot(context.Background(), d.Metadata, nil, "DIR/metadata", store.Options{})
			if c.name == "at the root" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var e *NoPulsarMetadataError
			if !errors.As(err, &e) || !errors.Is(err, ErrNoPulsarMetadata) {
				t.Fatalf("got %v, want a *NoPulsarMetadataError", err)
			}
			var chroots []string
			for _, f := range e.Found {
				chroots = append(chroots, f.Chroot)
			}
			if !slices.Equal(chroots, c.found) || e.Empty != c.empty {
				t.Errorf("found %v, empty %v; want %v, %v (%v)", chroots, e.Empty, c.found, c.empty, err)
			}
		})
	}
}

// TestCheckPulsarRootIsBounded: a root of many children without Pulsar's nodes
// is searched within the bound, and says the search stopped there.
func TestCheckPulsarRootIsBounded(t *testing.T) {
	nodes := map[string]string{}
	for i := range 100 {
		for j := range 5 {
			nodes[fmt.Sprintf("/n%03d/m%d/leaf", i, j)] = ""
		}
	}
	d, err := Open(filledDataDir(t, nodes), store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	counter := &readCounter{MetadataStore: d.Metadata}
	err = CheckPulsarRoot(context.Background(), counter, nil, "DIR/metadata", store.Options{})
	var e *NoPulsarMetadataError
	if !errors.As(err, &e) || !e.Truncated || len(e.Found) != 0 {
		t.Fatalf("got %v, want a truncated search that found nothing", err)
	}
	// Each probe is up to 3 Gets and 3 walks; each listing up to 2 walks per child.
	if limit := rootSearchProbes*6 + (rootSearchChildren*2+2)*(rootSearchProbes+1) + 8; counter.reads > limit {
		t.Errorf("the search made %d reads, more than its bound %d", counter.reads, limit)
	}
}

// readCounter counts the reads made through it.
type readCounter struct {
	store.MetadataStore
	reads int
}

func (c *readCounter) Get(p string) (store.Node, error) { c.reads++; return c.MetadataStore.Get(p) }

func (c *readCounter) WalkFrom(ctx context.Context, prefix, start string, fn func(store.Node) error) error {
	c.reads++
	return c.MetadataStore.WalkFrom(ctx, prefix, start, fn)
}
