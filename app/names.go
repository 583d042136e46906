package app

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/ledgermedic/ledgermedic/cluster"
	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// checkTopicKnown refuses a --topic the stores know nothing of (no schema locator
// and no managed ledger, of it or of its partitions): bad input, naming the
// nearest names there are. A typo must not read as "nothing to repair".
func checkTopicKnown(ctx context.Context, dd *datadir.DataDir, t formats.TopicName) error {
	_, err := dd.Metadata.Get(t.SchemaLocatorPath())
	switch {
	case err == nil, errors.Is(err, store.ErrTruncatedValue):
		return nil // there (damaged or not): the command reports what it finds
	case !errors.Is(err, store.ErrNotFound):
		return report.CannotOpen(err)
	}
	_, err = cluster.TopicManagedLedgers(ctx, dd.Metadata, t)
	switch {
	case err == nil:
		return nil // its managed ledger, or its partitions'; a damaged one is reported by the command
	case !errors.Is(err, cluster.ErrNoSuchTopic):
		return report.CannotOpen(err)
	}
	names, err := knownTopicNames(ctx, dd)
	if err != nil {
		return err
	}
	near := nearest(t.SchemaKey(), names, 3)
	msg := "no topic or schema named " + t.SchemaKey() + " in the metadata store"
	if len(near) > 0 {
		msg += "; nearest: " + strings.Join(near, ", ")
	} else if len(names) == 0 {
		msg += " (it holds no topic and no schema)"
	}
	return report.BadInputf("--topic %s: %s", t, msg)
}

// knownTopicNames lists every schema key and topic (tenant/ns/topic) the metadata
// store holds, partitions folded into their base topic.
func knownTopicNames(ctx context.Context, dd *datadir.DataDir) ([]string, error) {
	seen := map[string]bool{}
	err := dd.Metadata.Walk(ctx, formats.SchemasRoot+"/", func(n store.Node) error {
		if t, ok := formats.ParseSchemaLocatorPath(n.Path); ok {
			seen[t.SchemaKey()] = true
		}
		return nil
	})
	if err == nil {
		err = dd.Metadata.Walk(ctx, formats.ManagedLedgersRoot+"/", func(n store.Node) error {
			if t, ok := formats.ParseManagedLedgerPath(n.Path); ok {
				seen[t.SchemaKey()] = true
			}
			return nil
		})
	}
	if err != nil {
		return nil, report.CannotOpen(err)
	}
	names := make([]string, 0, len(seen))
	for k := range seen {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// nearest returns up to n names closest to s by edit distance, closest first.
func nearest(s string, names []string, n int) []string {
	type scored struct {
		name string
		d    int
	}
	var out []scored
	for _, name := range names {
		out = append(out, scored{name, editDistance(s, name)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].d < out[j].d })
	var res []string
	for i := 0; i < len(out) && i < n; i++ {
		res = append(res, out[i].name)
	}
	return res
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
