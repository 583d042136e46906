package inspect

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ledgermedic/ledgermedic/datadir"
	"github.com/ledgermedic/ledgermedic/formats"
	"github.com/ledgermedic/ledgermedic/formats/pulsarpb"
)

// BenchmarkEntryScan measures an entry scan (frame + CRC + MessageMetadata)
// against a raw Badger iteration of the same keys; the target is a scan at
// >= 0.7 x raw entries/s. Sub-benchmarks:
//
//	raw            RawLedgerIteration, every value's bytes touched
//	peek           formats.PeekEntry per entry: frame, CRC, the fields scans need
//	full           formats.ParseEntryInto per entry, messages reused: full decode
//	full-parallel  one goroutine iterates and hands copied value batches to a
//	               ParseEntryInto decoder per core, as SchemaUsage does
//	ratio          all four alternately, so load from other processes hits them
//	               alike; reports each scan's entries/s over raw's
//
// Entries that are no entry frame (schema and cursor ledgers) fall back to
// ParseEntryInto's error, as in the real scans. benchDataDir is shared with
// BenchmarkSchemaUsage (LEDGERMEDIC_BENCH_ENTRIES, LEDGERMEDIC_BENCH_DIR).
func BenchmarkEntryScan(b *testing.B) {
	dir := benchDataDir(b)
	dd := usageOpen(b, dir, true)
	ctx := context.Background()
	scans := []struct {
		name string
		run  func(context.Context, *datadir.DataDir) (scanCount, error)
	}{
		{"raw", scanRaw},
		{"peek", scanPeek},
		{"full", scanFull},
		{"full-parallel", scanFullParallel},
	}
	for _, s := range scans {
		b.Run(s.name, func(b *testing.B) {
			var n scanCount
			for b.Loop() {
				var err error
				if n, err = s.run(ctx, dd); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n.entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
			if s.name != "raw" && n.frames == 0 {
				b.Fatal("no entry frame parsed")
			}
		})
	}
	b.Run("ratio", func(b *testing.B) {
		spent := make([]time.Duration, len(scans))
		for b.Loop() {
			for i, s := range scans {
				start := time.Now()
				if _, err := s.run(ctx, dd); err != nil {
					b.Fatal(err)
				}
				spent[i] += time.Since(start)
			}
		}
		for i, s := range scans[1:] {
			r := spent[0].Seconds() / spent[i+1].Seconds()
			b.ReportMetric(r, s.name+"/raw")
			b.Logf("%s: %.2f x raw entries/s", s.name, r)
		}
	})
}

// scanCount is what a scan saw: entries read, entry frames parsed, and a sum
// of bytes so the work cannot be optimised away.
type scanCount struct {
	entries, frames int64
	sum             uint64
}

func scanRaw(ctx context.Context, dd *datadir.DataDir) (scanCount, error) {
	var n scanCount
	err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
		n.entries++
		n.sum += uint64(len(v))
		if len(v) > 0 {
			n.sum += uint64(v[0]) + uint64(v[len(v)/2]) + uint64(v[len(v)-1])
		}
		return nil
	})
	return n, err
}

func scanPeek(ctx context.Context, dd *datadir.DataDir) (scanCount, error) {
	var (
		n  scanCount
		r  formats.EntryRefs
		e  formats.Entry
		md pulsarpb.MessageMetadata
		bm pulsarpb.BrokerEntryMetadata
	)
	err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
		n.entries++
		if !formats.PeekEntry(v, &r) {
			if formats.ParseEntryInto(v, &e, &md, &bm) != nil {
				return nil
			}
			r = e.Refs()
		}
		n.frames++
		n.sum += r.PublishTime + uint64(len(r.SchemaVersion)+len(r.SchemaID))
		return nil
	})
	return n, err
}

func scanFull(ctx context.Context, dd *datadir.DataDir) (scanCount, error) {
	var d fullDecoder
	err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
		d.decode(v)
		return nil
	})
	return d.count, err
}

// fullDecoder decodes entries fully with reused messages.
type fullDecoder struct {
	e     formats.Entry
	md    pulsarpb.MessageMetadata
	bm    pulsarpb.BrokerEntryMetadata
	count scanCount
}

func (d *fullDecoder) decode(v []byte) {
	d.count.entries++
	if formats.ParseEntryInto(v, &d.e, &d.md, &d.bm) != nil {
		return
	}
	d.count.frames++
	d.count.sum += d.md.GetPublishTime() + uint64(len(d.md.GetProducerName())+len(d.md.GetSchemaVersion()))
	if d.e.ChecksumOK {
		d.count.sum++
	}
}

// Batches of the full-parallel scan (as SchemaUsage's were before entryPass).
const (
	usageBatchEntries = 512
	usageBatchBytes   = 1 << 20
)

// valueBatch carries copied values from the iterating goroutine to a decoder.
type valueBatch struct {
	data []byte
	ends []int
}

func scanFullParallel(ctx context.Context, dd *datadir.DataDir) (scanCount, error) {
	workers := runtime.GOMAXPROCS(0)
	// A fixed set of batches circulates, as in SchemaUsage: memory stays flat.
	free := make(chan *valueBatch, 2*workers)
	for range cap(free) {
		free <- &valueBatch{data: make([]byte, 0, usageBatchBytes), ends: make([]int, 0, usageBatchEntries)}
	}
	work := make(chan *valueBatch, cap(free))
	decoders := make([]fullDecoder, workers)
	var wg sync.WaitGroup
	for w := range decoders {
		d := &decoders[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for vb := range work {
				start := 0
				for _, end := range vb.ends {
					d.decode(vb.data[start:end])
					start = end
				}
				vb.data, vb.ends = vb.data[:0], vb.ends[:0]
				free <- vb
			}
		}()
	}
	vb := <-free
	err := dd.RawLedgerIteration(ctx, func(k, v []byte) error {
		if len(vb.ends) == cap(vb.ends) || len(vb.data)+len(v) > cap(vb.data) && len(vb.ends) > 0 {
			work <- vb
			vb = <-free
		}
		vb.data = append(vb.data, v...)
		vb.ends = append(vb.ends, len(vb.data))
		return nil
	})
	if len(vb.ends) > 0 {
		work <- vb
	}
	close(work)
	wg.Wait()
	var n scanCount
	for i := range decoders {
		d := &decoders[i]
		n.entries += d.count.entries
		n.frames += d.count.frames
		n.sum += d.count.sum
	}
	return n, err
}
