package badgerdir

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/ledgermedic/ledgermedic/store"
)

// countingStore is a real metadata store that counts the Gets that reach it.
type countingStore struct {
	store.MetadataStore
	gets int
}

func (c *countingStore) Get(path string) (store.Node, error) {
	c.gets++
	return c.MetadataStore.Get(path)
}

func (c *countingStore) GetNodes(paths []string) ([]store.Node, error) {
	return c.MetadataStore.(store.NodeBatcher).GetNodes(paths)
}

// ReadAhead answers every path it read ahead, present or absent, as the store's
// own Get does, without a Get of the store; any other path is read from the store.
func TestReadAheadAnswersAsGetDoes(t *testing.T) {
	d := newWritable(t)
	var paths []string
	for i := range 250 { // more than one batch
		p := fmt.Sprintf("/ledgers/00/0000/L%04d", i)
		paths = append(paths, p)
		if i%3 != 0 { // every third is absent
			if _, err := d.Metadata.CompareAndSet(p, 0, []byte(p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cs := &countingStore{MetadataStore: d.Metadata}
	ahead := store.ReadAhead(cs, paths)
	for _, p := range paths {
		got, err := ahead.Get(p)
		want, wantErr := d.Metadata.Get(p)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) || errors.Is(err, store.ErrNotFound) != errors.Is(wantErr, store.ErrNotFound) ||
			got.Path != want.Path || got.Version != want.Version || !bytes.Equal(got.Value, want.Value) {
			t.Fatalf("%s: read ahead %+v, %v; Get %+v, %v", p, got, err, want, wantErr)
		}
	}
	if cs.gets != 0 {
		t.Fatalf("%d Gets reached the store for paths read ahead", cs.gets)
	}
	if n, err := ahead.Get("/other"); !errors.Is(err, store.ErrNotFound) || cs.gets != 1 {
		t.Fatalf("a path not read ahead: %+v, %v, %d Gets", n, err, cs.gets)
	}
}
