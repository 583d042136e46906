package mutate

import (
	"errors"
	"strings"
	"testing"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/store"
)

// openReadOnly opens path read-only, as a dry run does.
func openReadOnly(t *testing.T, path string) *datadir.DataDir {
	t.Helper()
	ro, err := datadir.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return ro
}

// CheckUndo, on a data dir opened read-only, refuses what Undo refuses, with the
// same errors, and writes nothing: an unknown run, a node changed since the run,
// a run already undone.
func TestCheckUndoRefusesWhatUndoRefuses(t *testing.T) {
	dd, path, _, res := appliedSample(t)
	if err := dd.Close(); err != nil {
		t.Fatal(err)
	}
	ro := openReadOnly(t, path)
	before := dump(t, ro)
	passed, err := CheckUndo(ctx, ro, res.RunID)
	if err != nil || len(passed) != 1 || passed[0].RunID != res.RunID {
		t.Fatalf("CheckUndo of a committed run = %v, %v; want it to pass", passed, err)
	}
	if _, err := CheckUndo(ctx, ro, "no-such-run"); !errors.Is(err, ErrRunNotFound) {
		t.Errorf("CheckUndo of an unknown run = %v, want ErrRunNotFound", err)
	}
	if d := before.diff(dump(t, ro)); d != "" {
		t.Errorf("CheckUndo wrote:\n%s", d)
	}
	ro.Close()

	// A node the run wrote changes: both refuse, naming it.
	dd, err = datadir.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dd.Close() })
	n, err := dd.Metadata.Get("/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dd.Metadata.CompareAndSet("/a", n.Version, []byte("someone else")); err != nil {
		t.Fatal(err)
	}
	_, undoErr := newEngine(t, dd).Undo(ctx, res.RunID, ApplyOptions{})
	dd.Close()
	_, checkErr := CheckUndo(ctx, openReadOnly(t, path), res.RunID)
	for what, err := range map[string]error{"Undo": undoErr, "CheckUndo": checkErr} {
		if !errors.Is(err, store.ErrVersionMismatch) || !strings.Contains(err.Error(), "node /a changed since") {
			t.Errorf("%s after /a changed = %v; want ErrVersionMismatch naming /a", what, err)
		}
	}

	// A run undone: both refuse to undo it again.
	dd2, path2, e2, res2 := appliedSample(t)
	if _, err := e2.Undo(ctx, res2.RunID, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	_, undoErr = e2.Undo(ctx, res2.RunID, ApplyOptions{})
	dd2.Close()
	_, checkErr = CheckUndo(ctx, openReadOnly(t, path2), res2.RunID)
	for what, err := range map[string]error{"Undo": undoErr, "CheckUndo": checkErr} {
		if !errors.Is(err, ErrAlreadyUndone) {
			t.Errorf("%s of an undone run = %v, want ErrAlreadyUndone", what, err)
		}
	}
}
