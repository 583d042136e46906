package report

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Progress is how long loops report how far they are. A bar on a TTY, nothing otherwise.
type Progress interface {
	// Start begins a phase; total <= 0 means unknown.
	Start(label string, total int64)
	Add(n int64)
	Done()
}

// NoProgress reports nothing.
type NoProgress struct{}

func (NoProgress) Start(string, int64) {}
func (NoProgress) Add(int64)           {}
func (NoProgress) Done()               {}

// NewProgress returns a bar writing to w when enabled (w is a terminal), else NoProgress.
func NewProgress(w io.Writer, enabled bool) Progress {
	if !enabled {
		return NoProgress{}
	}
	return &bar{w: w, now: time.Now}
}

type bar struct {
	mu     sync.Mutex
	w      io.Writer
	now    func() time.Time
	label  string
	total  int64
	done   int64
	start  time.Time
	lastAt time.Time
}

func (b *bar) Start(label string, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.label, b.total, b.done = label, total, 0
	b.start = b.now()
	b.lastAt = time.Time{}
}

func (b *bar) Add(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	// Redraw at most ten times a second: the bar must not slow the scan.
	if t := b.now(); t.Sub(b.lastAt) >= 100*time.Millisecond {
		b.lastAt = t
		b.draw(t)
	}
}

func (b *bar) Done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw(b.now())
	fmt.Fprintln(b.w)
}

func (b *bar) draw(t time.Time) {
	elapsed := t.Sub(b.start).Seconds()
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.done) / elapsed
	}
	if b.total > 0 {
		pct := float64(b.done) * 100 / float64(b.total)
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(b.total-b.done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		fmt.Fprintf(b.w, "\r%s %d/%d (%.1f%%) %.0f/s ETA %s   ", b.label, b.done, b.total, pct, rate, eta)
		return
	}
	fmt.Fprintf(b.w, "\r%s %d %.0f/s   ", b.label, b.done, rate)
}
