package store

import (
	"errors"
	"fmt"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
)

// badgerOptions are the options of every Badger database this package opens.
//
// Badger defaults, except:
//   - no logging: Badger's log lines would interleave with the tool's output;
//   - SyncWrites for writable opens: a repair tool must not report a write done
//     (and journal it as applied) before it is on disk. Bulk loads use WriteBatch,
//     which syncs once per batch, so the cost stays small.
func badgerOptions(dir string, readOnly bool) badger.Options {
	return badger.DefaultOptions(dir).
		WithLogger(nil).
		WithReadOnly(readOnly).
		WithSyncWrites(!readOnly)
}

// openBadger opens one database and maps Badger's open errors to this package's sentinels.
func openBadger(dir string, readOnly bool) (*badger.DB, error) {
	db, err := badger.Open(badgerOptions(dir, readOnly))
	if err != nil {
		return nil, mapOpenError(dir, err)
	}
	return db, nil
}

// mapOpenError is the one place that recognises Badger's open errors. Badger wraps them
// with %+v, so they are not errors.Is-able and only their text identifies them.
func mapOpenError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Cannot acquire directory lock"):
		return fmt.Errorf("%s: %w: another process (a Pulsar broker tool, another ledgermedic) has it open; stop it and retry", dir, ErrLocked)
	case strings.Contains(msg, "Log truncate required"), strings.Contains(msg, badger.ErrTruncateNeeded.Error()):
		return fmt.Errorf("%s: %w", dir, ErrUncleanShutdown)
	case strings.Contains(msg, "no manifest found"):
		return fmt.Errorf("%s: %w: no Badger MANIFEST", dir, ErrNotDataDir)
	}
	return fmt.Errorf("open Badger database %s: %w", dir, err)
}

// mapTxnError maps Badger's transaction errors, which are plain sentinels.
func mapTxnError(err error) error {
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		return ErrNotFound
	case errors.Is(err, badger.ErrConflict):
		return fmt.Errorf("%w: a concurrent write changed it", ErrVersionMismatch)
	}
	return err
}

// valueSizeSlack bounds how far Item.ValueSize may overestimate a value-log value:
// it assumes a 6-byte entry header, and real headers take 5 to 22 bytes.
const valueSizeSlack = 16

// checkValue reports ErrTruncatedValue when Badger returned fewer bytes than the item
// records. Badger does not fail such reads: when the value log is shorter than a value
// pointer says, it logs the problem and returns an empty value.
func checkValue(item *badger.Item, got int) error {
	want := item.ValueSize()
	if want > 0 && (got == 0 || int64(got) < want-valueSizeSlack) {
		return fmt.Errorf("%w (read %d of about %d bytes)", ErrTruncatedValue, got, want)
	}
	return nil
}

// ctxCheckEvery is how many iterated keys pass between context checks.
const ctxCheckEvery = 64
