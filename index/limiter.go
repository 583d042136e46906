package index

import (
	"context"
	"sync"
	"time"
)

// limiter is a token bucket: rate tokens a second, holding at most burst.
// A nil limiter never waits.
type limiter struct {
	mu       sync.Mutex
	interval time.Duration
	burst    float64
	tokens   float64
	last     time.Time
}

func newLimiter(rate float64, burst int) *limiter {
	if rate <= 0 {
		return nil
	}
	b := float64(max(burst, 1))
	return &limiter{interval: time.Duration(float64(time.Second) / rate), burst: b, tokens: b, last: time.Now()}
}

// wait takes one token, sleeping until one is there or ctx ends.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	l.mu.Lock()
	now := time.Now()
	l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.interval))
	l.last = now
	l.tokens-- // may go negative: the debt is how long this caller sleeps
	var delay time.Duration
	if l.tokens < 0 {
		delay = time.Duration(-l.tokens * float64(l.interval))
	}
	l.mu.Unlock()
	if delay <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
