// Package ratewisetest helps test code that uses ratewise: a manual clock,
// which a test advances instead of sleeping out a window.
package ratewisetest

import (
	"context"
	"sync"
	"time"
)

// Clock is a clock that moves only when told to. Pass it with
// ratewise.WithClock, then Advance it by a Result's RetryAfter to reach the
// moment a denied request is admitted, without waiting. It is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d, which may be negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Sleep moves the clock by d at once instead of waiting, so that
// Limiter.Wait returns without sleeping in a test. It returns ctx's error,
// without moving the clock, when ctx has ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}
