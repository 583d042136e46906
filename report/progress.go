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

// Estimator is a Progress that can show a total that is only an estimate
// (a store's own figures, read without a counting pass).
type Estimator interface {
	StartEstimate(label string, estimate int64)
}

// StartEstimate begins a phase whose total is about estimate: on a bar that
// shows it as such ("~"), and as a rate once the count passes it.
func StartEstimate(p Progress, label string, estimate int64) {
	if e, ok := p.(Estimator); ok {
		e.StartEstimate(label, estimate)
		return
	}
	p.Start(label, 0)
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
	approx bool // total is an estimate
	done   int64
	start  time.Time
	lastAt time.Time
}

func (b *bar) Start(label string, total int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.label, b.total, b.done, b.approx = label, total, 0, false
	b.start = b.now()
	b.lastAt = time.Time{}
}

func (b *bar) StartEstimate(label string, estimate int64) {
	b.Start(label, estimate)
	b.mu.Lock()
	b.approx = true
	b.mu.Unlock()
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
	if b.total > 0 && b.done <= b.total {
		pct := float64(b.done) * 100 / float64(b.total)
		eta := "?"
		if rate > 0 {
			eta = time.Duration(float64(b.total-b.done) / rate * float64(time.Second)).Round(time.Second).String()
		}
		about := ""
		if b.approx {
			about = "~"
		}
		fmt.Fprintf(b.w, "\r%s %d/%s%d (%.1f%%) %.0f/s ETA %s   ", b.label, b.done, about, b.total, pct, rate, eta)
		return
	}
	fmt.Fprintf(b.w, "\r%s %d %.0f/s   ", b.label, b.done, rate)
}
