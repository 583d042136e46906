package inspect

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledgermedic/ledgermedic/store"
)

// walkNodes is MetadataStore.Walk that survives values truncated by a damaged
// value log: it reports each one to bad and goes on with the keys after it.
//
// The store's Walk stops at a truncated value and cannot seek, so the keys after
// the bad key K are walked as the prefixes that cover them, in key order: K+c for
// every byte c (K's descendants), then K[:i]+c for c > K[i], from the last byte of
// K back to the end of prefix. That is a few thousand short walks, paid only when
// a value is damaged.
func walkNodes(ctx context.Context, ms store.MetadataStore, prefix string, fn func(store.Node) error, bad func(path string, err error) error) error {
	err := ms.Walk(ctx, prefix, fn)
	if err == nil || !errors.Is(err, store.ErrTruncatedValue) {
		return err
	}
	key, ok := truncatedNodePath(err)
	if !ok || !strings.HasPrefix(key, prefix) {
		return err
	}
	if err := bad(key, err); err != nil {
		return err
	}
	for c := 0; c < 256; c++ {
		if err := walkNodes(ctx, ms, key+string([]byte{byte(c)}), fn, bad); err != nil {
			return err
		}
	}
	for i := len(key) - 1; i >= len(prefix); i-- {
		for c := int(key[i]) + 1; c < 256; c++ {
			if err := walkNodes(ctx, ms, key[:i]+string([]byte{byte(c)}), fn, bad); err != nil {
				return err
			}
		}
	}
	return nil
}

// truncatedNodePath recovers the node path from the store's error text,
// `metadata node "<path>": ...`: the store names the key only there.
func truncatedNodePath(err error) (string, bool) {
	msg := err.Error()
	const marker = "metadata node "
	i := strings.Index(msg, marker)
	if i < 0 {
		return "", false
	}
	q, qerr := strconv.QuotedPrefix(msg[i+len(marker):])
	if qerr != nil {
		return "", false
	}
	p, uerr := strconv.Unquote(q)
	return p, uerr == nil
}

// streamLedger is LedgerStore.Entries from entry id from to the end of a ledger
// that survives truncated values: each one is passed to bad with its entry id and
// the stream goes on.
// Entries stops at a truncated value without naming it, so the bad entry is found
// by reading the ids after the last good one, up to the ledger's last entry.
func streamLedger(ctx context.Context, ls store.LedgerStore, ledgerID, from int64, fn func(entryID int64, value []byte) error, bad func(entryID int64, err error) error) error {
	for {
		last := from - 1
		err := ls.Entries(ctx, ledgerID, from, -1, func(id int64, v []byte) error {
			last = id
			return fn(id, v)
		})
		if err == nil || !errors.Is(err, store.ErrTruncatedValue) {
			return err
		}
		end, lerr := ls.LastEntry(ledgerID)
		if lerr != nil {
			return fmt.Errorf("ledger %d: after a truncated value: %w", ledgerID, lerr)
		}
		found := false
		for id := last + 1; id <= end && id >= 0; id++ {
			_, gerr := ls.Entry(ledgerID, id)
			if errors.Is(gerr, store.ErrNotFound) {
				continue
			}
			if gerr == nil {
				break // readable: the damage was elsewhere; should not happen
			}
			if !errors.Is(gerr, store.ErrTruncatedValue) {
				return gerr
			}
			if err := bad(id, gerr); err != nil {
				return err
			}
			from, found = id+1, true
			break
		}
		if !found {
			return err
		}
	}
}
