package formats

import (
	"errors"

	"google.golang.org/protobuf/proto"
)

// Sentinel errors; decoders wrap them with the byte offset or path at fault.
var (
	// ErrTruncated means the bytes end before a length or size they declare.
	ErrTruncated = errors.New("truncated")
	// ErrUnsupportedVersion means a versioned format (BookKeeper metadata
	// text version, schema version bytes) is valid but not one we handle.
	ErrUnsupportedVersion = errors.New("unsupported format version")
	// ErrNotLedgerPath means a path is not a BookKeeper ledger node.
	ErrNotLedgerPath = errors.New("not a ledger node path")
	// ErrBadTopicName means a topic name or its encoded form is malformed.
	ErrBadTopicName = errors.New("bad topic name")
)

// unmarshal reads protobuf leniently: a message missing required fields is
// still shown, so damaged metadata can be inspected and repaired.
var unmarshal = proto.UnmarshalOptions{AllowPartial: true}

// marshal writes protobuf the way it must be stored: required fields checked,
// output stable across runs (golden files, plan hashes).
var marshal = proto.MarshalOptions{Deterministic: true}
