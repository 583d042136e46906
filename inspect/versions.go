package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/internal/spill"
	"github.com/ledgermedic/ledgermedic/store"
)

// The schema-usage join asks, of each registry version stored messages use
// and their topic's locator lists, whether its entry is still stored and
// when the version was registered. Check has read every schema version's
// entry in its pass already (the schema step writes what it found, by schema
// key and version: versionFile), so its join reads no entry again; the
// schema-usage view alone reads them from the store (storeVersions).

// versionFact is what became of one schema version's ledger and entry.
type versionFact struct {
	node      bool  // the ledger's node exists
	stored    bool  // the entry is stored (and its bytes read, whatever they say)
	truncated bool  // the entry is stored but its value is damaged
	ts        int64 // the SchemaInfo's registration time, when hasTS
	hasTS     bool
}

// versionSource tells what became of the entry (ledger, entry) of version
// version of schema key.
type versionSource interface {
	version(key string, version, ledger, entry int64) (versionFact, error)
}

// storeVersions reads the entry and, when it is gone, the ledger's node.
type storeVersions struct{ dd *datadir.DataDir }

func (s storeVersions) version(key string, version, ledger, entry int64) (versionFact, error) {
	var vf versionFact
	v, err := s.dd.Ledgers.Entry(ledger, entry)
	switch {
	case err == nil:
		vf.stored = true
		if info, err := decodeSchemaValue(v); err == nil && info.Timestamp != nil {
			vf.ts, vf.hasTS = info.GetTimestamp(), true
		}
		return vf, nil
	case errors.Is(err, store.ErrTruncatedValue):
		vf.stored, vf.truncated = true, true
		return vf, nil
	case !errors.Is(err, store.ErrNotFound):
		return vf, fmt.Errorf("schema usage: %s version %d: %w", key, version, err)
	}
	vf.node, err = cluster.LedgerNodeExists(s.dd.Metadata, ledger)
	if err != nil {
		return vf, fmt.Errorf("schema usage: ledger %d node: %w", ledger, err)
	}
	return vf, nil
}

// versionFile is the schema step's record of every schema version it
// checked, by schema key and version, read in (mostly) ascending key order;
// a version it has no record of is read from the store.
type versionFile struct {
	r     *spill.Reader
	store storeVersions
}

func versionKey(key string, version int64) []byte {
	return idKey(append([]byte(key), 0), version)
}

func encodeVersionFact(b enc, vf versionFact) enc {
	return b.flags(vf.node, vf.stored, vf.truncated, vf.hasTS).int(vf.ts)
}

func (f *versionFile) version(key string, version, ledger, entry int64) (versionFact, error) {
	k := versionKey(key, version)
	f.r.Seek(k)
	if !f.r.Next() || string(f.r.Key()) != string(k) {
		if err := f.r.Err(); err != nil {
			return versionFact{}, err
		}
		return f.store.version(key, version, ledger, entry)
	}
	var vf versionFact
	d := dec{b: f.r.Value()}
	d.flags(&vf.node, &vf.stored, &vf.truncated, &vf.hasTS)
	vf.ts = d.int()
	return vf, d.done("schema version fact")
}

// noteVersion records what the schema step found of one schema version, for
// the schema-usage join.
func (c *checker) noteVersion(sv *schemaVersion, a svAnswer, ent *svEntryAnswer) error {
	if c.usage == nil {
		return nil
	}
	if c.versionSort == nil {
		c.versionSort = c.spill.NewSorter("schema-versions-by-key", answerBudget)
	}
	vf := versionFact{node: a.node}
	if ent != nil {
		vf.stored, vf.truncated = true, ent.state == StateTruncated
		vf.ts, vf.hasTS = ent.ts, ent.hasTS
	}
	if err := c.versionSort.Add(versionKey(sv.key, sv.version), encodeVersionFact(nil, vf)); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	return nil
}

// versionsFile writes the schema step's records to a File for the
// schema-usage join (nil: no usage count, or no versions).
func (c *checker) versionsFile(ctx context.Context) (*spill.File, error) {
	if c.versionSort == nil {
		return nil, nil
	}
	defer c.versionSort.Close()
	f, err := c.spill.NewFile("schema-versions-by-key")
	if err != nil {
		return nil, err
	}
	var last []byte
	err = c.versionSort.Sorted(ctx, func(k, v []byte) error {
		if string(k) == string(last) {
			return nil // one locator listed a version twice: the first is the one checked
		}
		last = append(last[:0], k...)
		return f.Append(k, v)
	})
	if err == nil {
		err = f.Finish()
	}
	return f, err
}
