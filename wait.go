package ratewise

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// ErrWaitExceedsDeadline is returned by Wait and WaitN when the wait for
// admission would outlast the context's deadline. Nothing is charged.
var ErrWaitExceedsDeadline = errors.New("ratewise: the wait would exceed the context's deadline")

// Sleeper is a Clock that can also wait. Wait and WaitN sleep through it
// when the limiter's Clock implements it, so that a test's clock
// (ratewisetest.Clock) moves instead of the test sleeping; otherwise they
// use a timer.
type Sleeper interface {
	// Sleep returns after d, or with ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Wait is shorthand for WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) (Result, error) {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until a request of cost n for key is admitted, and returns
// its Result. It returns at once with ErrWaitExceedsDeadline when the wait
// the limiter reports would outlast ctx's deadline, and with ctx's error
// when ctx ends while waiting; either way nothing is charged. Other errors
// are AllowN's.
//
// With an algorithm that can book ahead (algorithms.Reserver: the token
// bucket and GCRA) on a store that can (store.Reserver: the memory and
// Redis stores), a wait is one round trip: the request books the earliest
// time the key admits it, even across app instances, and sleeps until then.
// Waiters are served in the order they booked, with no herd. A booking
// charges at once; if ctx ends during the sleep, the booked turn is not
// given back (see the Result it returns).
//
// Otherwise a waiter sleeps for the denied request's RetryAfter, stretched
// by a random fraction of at most an eighth (and 50ms) so that many waiters
// on one key do not all wake at once, then asks again. That is not a queue:
// when several waiters want one slot, any of them may get it.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) (Result, error) {
	// The key's limit is chosen once, for the whole wait.
	alg, err := l.checkedAlgorithmFor(ctx, key)
	if err != nil {
		return Result{}, err
	}
	if rs, ok := l.store.(store.Reserver); ok {
		if _, ok := alg.(algorithms.Reserver); ok {
			return l.waitBooked(ctx, rs, key, alg, n)
		}
	}
	for {
		res, err := l.allow(ctx, key, alg, n)
		if err != nil || res.Allowed {
			return res, err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < res.RetryAfter {
			return res, fmt.Errorf("%w: %v to wait for %q", ErrWaitExceedsDeadline, res.RetryAfter, key)
		}
		wait := res.RetryAfter
		if spread := min(wait/8, 50*time.Millisecond); spread > 0 {
			wait += rand.N(spread)
		}
		if err := l.sleep(ctx, wait); err != nil {
			return res, err
		}
	}
}

func (l *Limiter) sleep(ctx context.Context, d time.Duration) error {
	if s, ok := l.clock.(Sleeper); ok {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// maxBooking is the longest wait a booking accepts without a deadline:
// the largest algorithms.CheckMaxWait allows.
const maxBooking = (1 << 50) * time.Microsecond

// waitBooked books the request's turn under alg, which has been checked,
// and sleeps until it.
func (l *Limiter) waitBooked(ctx context.Context, rs store.Reserver, key string, alg algorithms.Algorithm, n int64) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := checkCost(alg, n); err != nil {
		return Result{}, err
	}
	maxWait := maxBooking
	if deadline, ok := ctx.Deadline(); ok {
		maxWait = min(max(time.Until(deadline), 0), maxBooking).Truncate(time.Microsecond)
	}
	res, delay, err := rs.Reserve(ctx, l.prefix+key, alg, l.clock.Now(), n, maxWait)
	if err != nil {
		return res, err
	}
	if !res.Allowed {
		return res, fmt.Errorf("%w: %v to wait for %q", ErrWaitExceedsDeadline, res.RetryAfter+maxWait, key)
	}
	if delay > 0 {
		if err := l.sleep(ctx, delay); err != nil {
			return res, err
		}
	}
	return res, nil
}
