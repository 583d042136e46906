package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ledgermedic/ledgermedic/report"
	"github.com/ledgermedic/ledgermedic/store"
)

// probeWorkers bounds the ledgers probed at once; each probe sends one request
// to each bookie of a write set, and the store bounds requests per bookie.
const probeWorkers = 16

// ledgerProbe is what asking every bookie of a few entries' write sets found
// for one ledger.
type ledgerProbe struct {
	id      int64
	asked   []string // every bookie asked, once each, in order
	entries []int64  // the entries probed
	lost    bool     // every bookie asked answered that it holds no such entry
	// unreachable: no bookie asked answered at all (each is a bookie-unavailable
	// finding), so what the store holds of the ledger is unknown.
	unreachable bool
	findings    []report.Finding
	err         error
}

// probeReplicas asks, on a ledger store whose replicas can each be asked (live
// bookies), every bookie of the write sets of entry 0 and of the last entry of
// each ledger with metadata. A read stops at the first bookie that serves, so
// only this finds an entry fewer bookies hold than the write quorum, and a
// ledger no bookie holds. Two entries per ledger keep it to 2×Qw requests a
// ledger; entries in between are checked only by the scan's read.
func (c *checker) probeReplicas(ctx context.Context) error {
	pr, ok := c.dd.Ledgers.(store.ReplicaProber)
	if !ok {
		return nil
	}
	c.prog.Start("ledgers probed on every bookie", 0)
	defer c.prog.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		id     int64
		last   int64
		closed bool
	}
	jobs, results := make(chan job), make(chan *ledgerProbe)
	var wg sync.WaitGroup
	for range probeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				results <- c.probeLedger(ctx, pr, j.id, j.last, j.closed)
			}
		}()
	}
	var feedErr error
	go func() {
		defer func() { close(jobs); wg.Wait(); close(results) }()
		var f ledgerFacts
		feedErr = c.facts.Scan(ctx, nil, func(k, v []byte) error {
			if err := decodeFacts(v, &f); err != nil {
				return err
			}
			id := idOfKey(k)
			if !f.node || f.badNode || f.offloadedGone || !c.ownsLedger(id, &f) {
				return nil
			}
			select {
			case jobs <- job{id, f.lastEntryID, f.closed}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	var firstErr error
	for p := range results {
		c.prog.Add(1) // progress from this goroutine only
		if p.err != nil && firstErr == nil {
			firstErr = fmt.Errorf("check: probe ledger %d: %w", p.id, p.err)
			cancel()
		}
		if p.lost {
			c.notOnBookies[p.id] = p
		}
		if p.unreachable {
			c.unreachable[p.id] = true
		}
		for _, f := range p.findings {
			c.addAt(f, p.id, "")
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if feedErr != nil {
		return fmt.Errorf("check: %w", feedErr)
	}
	return ctx.Err()
}

// probeLedger probes entry 0 and the last entry (a closed ledger's lastEntryId,
// an open one's last add confirmed) of one ledger.
func (c *checker) probeLedger(ctx context.Context, pr store.ReplicaProber, id, last int64, closed bool) *ledgerProbe {
	p := &ledgerProbe{id: id}
	if !closed {
		l, err := c.dd.Ledgers.LastEntry(id)
		if err != nil {
			return p // nothing confirmed yet (or no bookie answered): nothing to probe
		}
		last = l
	}
	if last < 0 {
		return p
	}
	p.entries = []int64{0}
	if last > 0 {
		p.entries = append(p.entries, last)
	}
	lost, unreachable := true, true
	for _, e := range p.entries {
		ep, err := pr.ProbeEntry(ctx, id, e)
		if err != nil {
			p.err = err
			return p
		}
		for _, b := range ep.WriteSet {
			if !slices.Contains(p.asked, b) {
				p.asked = append(p.asked, b)
			}
		}
		if len(ep.Missing) < len(ep.WriteSet) {
			lost = false
		}
		if len(ep.Holding)+len(ep.Missing) > 0 {
			unreachable = false
		}
		// Only what a bookie answered counts: one that did not answer, or
		// returned a bad copy, is a replica finding of its own.
		if len(ep.Holding) > 0 && len(ep.Missing) > 0 {
			fd := newReplicaFinding(KindUnderReplicated, id, e,
				"%d of %d bookies of the write set [%s] hold it; missing on %s",
				len(ep.Holding), len(ep.WriteSet), strings.Join(ep.WriteSet, ", "), strings.Join(ep.Missing, ", "))
			p.findings = append(p.findings, fd)
		}
	}
	p.lost = lost && len(p.asked) > 0
	p.unreachable = unreachable && len(p.asked) > 0
	return p
}

// notOnBookiesFinding: every bookie asked answered that it holds no such ledger
// or entry, although the metadata says the ledger has entries.
func notOnBookiesFinding(id int64, path string, f *ledgerFacts, p *ledgerProbe) report.Finding {
	state := "CLOSED, lastEntryId " + fmt.Sprint(f.lastEntryID)
	if !f.closed {
		state = "OPEN"
	}
	ents := make([]string, len(p.entries))
	for i, e := range p.entries {
		ents[i] = fmt.Sprint(e)
	}
	fd := newFinding(KindLedgerNotOnBookies, ledgerLoc(id),
		"the ledger's entries are lost on every bookie of its ensemble (metadata left behind, bookkeeper#4287); restore them from a copy of a bookie dir, or remove what references the ledger once nothing holds it",
		"ledger node %s exists (%s) but no bookie holds the ledger: asked %s for entry %s, each answered it has no such ledger or entry",
		path, state, strings.Join(p.asked, ", "), strings.Join(ents, " and "))
	fd.LedgerID, fd.Path = report.Int64(id), path
	return fd
}

// openLedgerFinding reports an OPEN ledger that nothing writes to by design:
// the last LedgerInfo of a managed ledger and a cursor's ledger are open while
// their broker runs, anything else is likely left by a writer that crashed.
// No reader can prove there is no writer, so it is a warning.
func openLedgerFinding(id int64, path string, f *ledgerFacts) (report.Finding, bool) {
	if f.closed || f.openLast || f.refs&refCursor != 0 {
		return report.Finding{}, false
	}
	var who string
	switch {
	case f.refs&refLedgerInfo != 0:
		who = "a LedgerInfo names it but it is not the last ledger of its managed ledger"
	case f.refs&refSchema != 0:
		who = "a schema locator names it (a schema ledger is closed after its one entry)"
	default:
		who = "nothing references it"
	}
	fd := newFinding(KindLedgerOpen, ledgerLoc(id),
		"no reader can prove its writer is gone: if the broker or tool that created it is no longer running, an open with recovery (as a broker does when it loads the topic) closes it",
		"ledger node %s is OPEN and %s; its writer may have crashed", path, who)
	fd.LedgerID, fd.Path = report.Int64(id), path
	return fd, true
}

// newReplicaFinding is a finding of one of the replica kinds (replicaSeverity).
func newReplicaFinding(kind string, ledgerID, entryID int64, format string, args ...any) report.Finding {
	f := report.Finding{Kind: kind, Severity: replicaSeverity[kind], Location: entryLoc(ledgerID, entryID),
		Message: fmt.Sprintf(format, args...), Hint: replicaHint[kind]}
	f.LedgerID, f.EntryID = report.Int64(ledgerID), report.Int64(entryID)
	return f
}
