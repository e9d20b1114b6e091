package ratewise

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// errWaitExceedsDeadline is wrapped by the error of a Wait whose wait for
// admission would outlast the context's deadline: it matches
// context.DeadlineExceeded before the deadline has passed.
var errWaitExceedsDeadline = fmt.Errorf(
	"ratewise: the wait would exceed the context's deadline: %w",
	context.DeadlineExceeded,
)

// sleeper is a clock that can also wait (see WithClock).
type sleeper interface {
	// Sleep returns after d, or with ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// Wait is shorthand for WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) (Result, error) {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until a request of cost n for key is admitted, and returns
// its Result. It returns at once, charging nothing, when the wait would
// outlast ctx's deadline, with an error that matches
// context.DeadlineExceeded (while ctx.Err() is still nil); the Result's
// RetryAfter is then the wait the request needed, the shortest after which
// it would be admitted, on every path. It returns with ctx's error when
// ctx ends while waiting: a booking is then cancelled (see
// Reservation.Cancel), and a retrying waiter was charged nothing. A Result
// returned with an error is never Allowed, and names no charge to refund
// (Result.Charged). Other errors are AllowN's.
//
// With an algorithm that can book ahead (the token
// bucket and GCRA) on a store that can (store.Store.Reserve: the memory and
// Redis stores), a wait is one round trip: the request books the earliest
// time the key admits it, even across app instances, and sleeps until then.
// Waiters are served in the order they booked, with no herd. A booking
// charges at once, and is made only if its turn comes before ctx's
// deadline with time to spare for the round trip (the longest of the
// limiter's recent bookings); a reply that comes too late for that has its
// booking given back at once. If ctx ends during the sleep, the booking is
// cancelled (see Reservation.Cancel) and ctx's error returned.
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
	if algo.Reserves(alg) {
		return l.waitBooked(ctx, key, alg, n)
	}
	for {
		res, err := l.allow(ctx, key, alg, n)
		if err != nil || res.Allowed {
			return res, err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < res.RetryAfter {
			return res, fmt.Errorf("%w: %v to wait for %q", errWaitExceedsDeadline, res.RetryAfter, key)
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
	if s, ok := l.clock.(sleeper); ok {
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
// the largest a store accepts (algo.CheckMaxWait).
const maxBooking = algo.EnvelopeMaxWindow

// waitBooked books the request's turn under alg, which has been checked,
// and sleeps until it.
//
// The turn must come before ctx's deadline counting the round trip, since
// the sleep starts when the reply arrives: the booking asks for at most
// the time left less the longest recent round trip of this limiter's
// bookings (latency). If the round trip took longer than that, the booking
// is given back at once, before its turn, and the wait refused.
func (l *Limiter) waitBooked(ctx context.Context, key string, alg algorithms.Algorithm, n int64) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if err := checkCost(alg, n); err != nil {
		return Result{}, err
	}
	maxWait := maxBooking
	deadline, bounded := ctx.Deadline()
	if bounded {
		maxWait = min(max(time.Until(deadline)-l.latency.longest(), 0), maxBooking).Truncate(time.Microsecond)
	}
	r, err := l.book(ctx, key, alg, n, maxWait)
	if err != nil {
		return Result{}, err
	}
	if !r.res.Allowed {
		return r.res, fmt.Errorf("%w: %v to wait for %q", errWaitExceedsDeadline, r.res.RetryAfter, key)
	}
	if bounded && r.delay > 0 && time.Until(deadline) < r.delay {
		// Booked, but the reply came too late for the sleep to end before
		// the deadline: hand the turn back while it is still ahead.
		cctx, cancel := detached(ctx)
		defer cancel()
		if _, err := r.cancel(cctx); err != nil {
			return r.refused(), fmt.Errorf(
				"%w: %v to wait for %q, the booking took %v, and giving it back failed: %w",
				errWaitExceedsDeadline,
				r.delay,
				key,
				r.took,
				err,
			)
		}
		return r.refused(), fmt.Errorf(
			"%w: %v to wait for %q, and the booking took %v",
			errWaitExceedsDeadline,
			r.delay,
			key,
			r.took,
		)
	}
	if r.delay > 0 {
		if err := l.sleep(ctx, r.delay); err != nil {
			// The caller gives up its turn: hand it back. ctx has ended,
			// so the cancellation gets a context of its own.
			cctx, cancel := detached(ctx)
			defer cancel()
			_, _ = r.Cancel(cctx)
			return r.refused(), err
		}
	}
	return r.res, nil
}

// detached returns a context for giving back what a call charged after the
// call's own ctx has ended: ctx's values, no cancellation, a short timeout.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), time.Second)
}

// book runs one booking under alg, which has been checked.
func (l *Limiter) book(
	ctx context.Context,
	key string,
	alg algorithms.Algorithm,
	n int64,
	maxWait time.Duration,
) (*Reservation, error) {
	start := l.clock.Now()
	began := time.Now()
	res, delay, err := l.store.Reserve(ctx, l.key(key), alg, start, n, maxWait)
	took := time.Since(began)
	if l.observer != nil {
		e := decisionEvent(key, alg, n, res, err)
		e.StoreLatency = took
		l.observer(ctx, e)
	}
	if err != nil {
		return nil, err
	}
	l.latency.observe(took)
	return &Reservation{l: l, key: key, n: n, res: res, delay: delay, turn: start.Add(delay), took: took}, nil
}

// latency keeps the longest of a limiter's recent booking round trips:
// the margin a wait leaves before its deadline (see waitBooked). It is
// safe for concurrent use.
type latency struct {
	recent [8]atomic.Int64 // nanoseconds, the latest in recent[next%8]
	next   atomic.Uint32
}

func (lt *latency) observe(d time.Duration) {
	lt.recent[lt.next.Add(1)%uint32(len(lt.recent))].Store(int64(d))
}

func (lt *latency) longest() time.Duration {
	var most int64
	for i := range lt.recent {
		most = max(most, lt.recent[i].Load())
	}
	return time.Duration(most)
}

// Reservation is a request booked ahead with ReserveN. When its Result is
// Allowed, the booking was made: the request may act after Delay, and must
// not act before, and Cancel gives its turn back. When it is not, nothing
// was charged, and Result().RetryAfter is the wait until its turn, as for
// every denial.
type Reservation struct {
	l     *Limiter
	key   string
	n     int64
	res   Result
	delay time.Duration
	turn  time.Time     // on the limiter's clock
	took  time.Duration // the booking's round trip

	mu        sync.Mutex
	cancelled bool
}

// Delay is the wait until the booked request may act, counted from the
// limiter's clock reading when ReserveN was called: 0 when it may act at
// once.
func (r *Reservation) Delay() time.Duration { return r.delay }

// Result is the booking's Result. For a booking that waits, At is its
// turn.
func (r *Reservation) Result() Result { return r.res }

// Cancel gives the booking back, as Limiter.Refund does with its Result,
// and returns the key's state afterwards. Cancelled before its turn, with
// no booking made after it, a booking comes back whole; bookings made after
// it keep their turns, so a booking in the middle of a queue gives back
// only what no later booking depends on (as x/time/rate's Cancel does).
// Once its turn has come, on the limiter's clock, the request may have
// acted, so Cancel does nothing, as it does for a booking that was not
// made or was cancelled already: it returns the booking's own Result. A
// booking is given back at most once: if the store fails, Cancel returns
// the error, and calling it again does not retry. As with Limiter.Refund,
// do not cancel a booking after its key was Reset, which forgot it.
func (r *Reservation) Cancel(ctx context.Context) (Result, error) {
	if !r.l.clock.Now().Before(r.turn) {
		return r.res, nil
	}
	return r.cancel(ctx)
}

// cancel gives the booking back whatever the time: the limiter knows the
// request has not acted.
func (r *Reservation) cancel(ctx context.Context) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.res.Allowed || r.cancelled {
		return r.res, nil
	}
	r.cancelled = true
	return r.l.Refund(ctx, r.key, r.res, r.n)
}

// refused is the Result of a wait whose booking was given back: not
// admitted, RetryAfter the wait it had booked, and no charge for a refund
// to name (Result.Charged).
func (r *Reservation) refused() Result {
	return Result{
		Allowed:    false,
		Limit:      r.res.Limit,
		Remaining:  r.res.Remaining,
		RetryAfter: r.delay,
		ResetAfter: r.res.ResetAfter,
		At:         r.res.At,
	}
}

// ReserveN books a request of cost n for key at the earliest time the key
// admits it, if that is at most maxWait away, in one round trip, even
// across app instances: the caller then waits Delay and acts, or calls
// Cancel. Bookings are served in the order they were made. A booking that
// would wait longer than maxWait charges nothing, and its Result is not
// Allowed: its RetryAfter is then the wait until the request's turn, the
// shortest after which it would be admitted. It needs an algorithm that
// can book (the token bucket and GCRA) on a store that can
// (store.Store.Reserve), and fails with store.ErrUnsupported otherwise;
// maxWait must be a whole number of microseconds in [0, 2^50µs], or it
// fails with algorithms.ErrInvalidTime.
func (l *Limiter) ReserveN(ctx context.Context, key string, n int64, maxWait time.Duration) (*Reservation, error) {
	if key == "" {
		return nil, ErrEmptyKey
	}
	alg, err := l.checkedAlgorithmFor(ctx, key)
	if err != nil {
		return nil, err
	}
	if !algo.Reserves(alg) {
		return nil, fmt.Errorf("%w: %s cannot book requests ahead", store.ErrUnsupported, alg)
	}
	if err := checkCost(alg, n); err != nil {
		return nil, err
	}
	r, err := l.book(ctx, key, alg, n, maxWait)
	if err != nil {
		return nil, err
	}
	return r, nil
}
