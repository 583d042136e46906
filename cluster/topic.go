package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/store"
)

// ErrNoSuchTopic means no managed ledger (or schema locator) exists for a topic.
var ErrNoSuchTopic = errors.New("no such topic in the metadata store")

// WalkNodes is MetadataStore.Walk that survives values truncated by a damaged
// value log: it reports each one to bad and resumes the walk after it.
func WalkNodes(ctx context.Context, ms store.MetadataStore, prefix string, fn func(store.Node) error, bad func(*store.TruncatedError) error) error {
	err := ms.Walk(ctx, prefix, fn)
	for start := ""; err != nil; {
		te, ok := truncatedNode(err, prefix, start)
		if !ok {
			return err
		}
		if err := bad(te); err != nil {
			return err
		}
		start = te.Path + "\x00" // the next path
		err = ms.WalkFrom(ctx, prefix, start, fn)
	}
	return nil
}

// truncatedNode returns the truncated node a walk of prefix from start stopped
// at, telling it from a truncated value fn met reading another node.
func truncatedNode(err error, prefix, start string) (*store.TruncatedError, bool) {
	var te *store.TruncatedError
	if !errors.As(err, &te) || te.Path == "" || !strings.HasPrefix(te.Path, prefix) || te.Path < start {
		return nil, false
	}
	return te, true
}

// Names reports whether the topic named want stands for managed ledger t: t is
// want, or want is not a partition and t is one of its partitions.
func Names(want, t formats.TopicName) bool {
	return t == want || want.PartitionIndex() < 0 && t.PartitionIndex() >= 0 && t.Base() == want
}

// ManagedLedger is one managed-ledger node of a topic; Damaged is set instead of
// Node's value when the node's bytes cannot be read.
type ManagedLedger struct {
	Topic   formats.TopicName // the partition's name for a partition
	Node    store.Node        // Value is a copy
	Damaged *store.TruncatedError
}

// TopicManagedLedgers resolves a topic to its managed-ledger nodes: the topic's
// own node, or, when it has none and is not itself a partition, the nodes of its
// partitions (<topic>-partition-N), in partition order. Each node is read once.
// A node whose value is damaged is returned with Damaged set, so the caller
// decides whether that is a finding or an error. No node at all is
// ErrNoSuchTopic.
func TopicManagedLedgers(ctx context.Context, ms store.MetadataStore, topic formats.TopicName) ([]ManagedLedger, error) {
	n, err := ms.Get(topic.ManagedLedgerPath())
	var te *store.TruncatedError
	switch {
	case err == nil:
		n.Value = bytes.Clone(n.Value)
		return []ManagedLedger{{Topic: topic, Node: n}}, nil
	case errors.As(err, &te):
		return []ManagedLedger{{Topic: topic, Node: store.Node{Path: topic.ManagedLedgerPath()}, Damaged: te}}, nil
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	var parts []ManagedLedger
	if topic.PartitionIndex() < 0 {
		prefix := topic.Partition(0).ManagedLedgerPath()
		prefix = prefix[:len(prefix)-1] // .../<topic>-partition-
		partition := func(path string) (formats.TopicName, bool) {
			p, ok := formats.ParseManagedLedgerPath(path)
			return p, ok && p != topic && Names(topic, p)
		}
		err = WalkNodes(ctx, ms, prefix, func(n store.Node) error {
			if p, ok := partition(n.Path); ok {
				n.Value = bytes.Clone(n.Value) // valid only during the walk
				parts = append(parts, ManagedLedger{Topic: p, Node: n})
			}
			return nil
		}, func(te *store.TruncatedError) error {
			if p, ok := partition(te.Path); ok {
				parts = append(parts, ManagedLedger{Topic: p, Node: store.Node{Path: te.Path}, Damaged: te})
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("topic %s: no managed ledger at %s nor partitions of it: %w", topic, topic.ManagedLedgerPath(), ErrNoSuchTopic)
	}
	slices.SortFunc(parts, func(a, b ManagedLedger) int { return a.Topic.PartitionIndex() - b.Topic.PartitionIndex() })
	return parts, nil
}
