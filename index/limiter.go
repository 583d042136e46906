package index

import (
	"context"

	"golang.org/x/time/rate"
)

// limiter caps reads a second for --rate: golang.org/x/time/rate's token
// bucket, holding at most burst tokens. A nil limiter never waits.
type limiter struct {
	l *rate.Limiter
}

func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond <= 0 {
		return nil
	}
	return &limiter{l: rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))}
}

// wait takes one token, sleeping until one is there or ctx ends. rate.Limiter
// returns at once when the wait would outlast ctx's deadline; without one it
// sleeps until the token or ctx's end.
func (l *limiter) wait(ctx context.Context) error {
	if l == nil {
		return ctx.Err()
	}
	return l.l.Wait(ctx)
}
