package spill

import (
	"bytes"
	"context"
	"errors"
)

// errPastPrefix ends a ScanPrefix at the first key without the prefix.
var errPastPrefix = errors.New("spill: past the prefix")

// ScanPrefix calls fn with every record whose key starts with prefix and does not
// sort before from, in order: Scan from the later of the two, stopped at the
// first key past the prefix (they are all together in key order).
func (f *File) ScanPrefix(ctx context.Context, prefix, from []byte, fn func(key, value []byte) error) error {
	if bytes.Compare(prefix, from) > 0 {
		from = prefix
	}
	err := f.Scan(ctx, from, func(key, value []byte) error {
		if !bytes.HasPrefix(key, prefix) {
			return errPastPrefix
		}
		return fn(key, value)
	})
	if errors.Is(err, errPastPrefix) {
		return nil
	}
	return err
}
