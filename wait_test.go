package ratewise_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// Wait sleeps through the limiter's clock, which a test clock turns into
// moving time: three waits at 1 per second take two seconds of it, plus at
// most an eighth of each wait of spread.
func TestWaitSleepsUntilAdmitted(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratewisetest.NewClock(start)
	l, err := ratewise.New(
		storememory.New(),
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		ratewise.WithClock(clock),
	)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := l.Wait(context.Background(), "k")
		if err != nil || !res.Allowed {
			t.Fatalf("wait %d: %+v, %v", i, res, err)
		}
	}
	if took := clock.Now().Sub(start); took < 2*time.Second || took > 2*time.Second+2*time.Second/8 {
		t.Fatalf("three waits at 1 per second took %v of the clock, want 2s to 2.25s", took)
	}
}

// A wait that would outlast the deadline fails at once and charges nothing.
func TestWaitRefusesAWaitPastTheDeadline(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	l, _ := ratewise.New(
		storememory.New(),
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
		ratewise.WithClock(clock),
	)
	l.AllowN(context.Background(), "k", 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := l.WaitN(ctx, "k", 2) // 2s to wait, the deadline an hour away: fine
	if err != nil || !res.Allowed {
		t.Fatalf("a wait within the deadline: %+v, %v", res, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	before := clock.Now()
	if res, err := l.Wait(short, "k"); !errors.Is(err, context.DeadlineExceeded) || res.Allowed || short.Err() != nil {
		t.Fatalf("a 1s wait with 500ms left: %+v, %v; want context.DeadlineExceeded before the deadline", res, err)
	}
	if !clock.Now().Equal(before) {
		t.Fatal("the refused wait slept")
	}
	if res, _ := l.PeekN(context.Background(), "k", 1); res.Remaining != 0 || res.RetryAfter != time.Second {
		t.Fatalf("after the refused wait: %+v, want nothing charged (1s to wait)", res)
	}
}

// Without a test clock, Wait sleeps on a timer and returns the context's
// error when it is cancelled: its booking given back, and a Result that is
// not Allowed and names no charge, so that a refund of it is refused.
func TestWaitEndsWithItsContext(t *testing.T) {
	l, _ := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1})
	l.Allow(context.Background(), "k")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	res, err := l.Wait(ctx, "k")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if alg, cost := res.Charged(); res.Allowed || alg != nil || cost != 0 {
		t.Fatalf("the Result of a wait cut short: %+v, charged %v, %d; want not Allowed and no charge", res, alg, cost)
	}
	if _, err := l.Refund(context.Background(), "k", res, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
		t.Fatalf("a refund of a wait cut short: %v, want ErrNotAdmitted", err)
	}
	if p, err := l.PeekN(context.Background(), "k", 1); err != nil || p.RetryAfter > time.Hour {
		t.Fatalf("after the wait was cut short: %+v, %v; want only the first admission charged", p, err)
	}
}

// latentStore is a store whose bookings take rtt of real time to come back,
// as over a slow network, and that counts the refunds it is asked for.
type latentStore struct {
	*storememory.Store
	rtt     time.Duration
	refunds atomic.Int64
}

func (s *latentStore) Reserve(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	key := sk.String()
	res, delay, err := s.Store.Reserve(ctx, store.Key{Name: key}, alg, now, cost, maxWait)
	time.Sleep(s.rtt) // the reply's way back
	return res, delay, err
}

func (s *latentStore) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	key := sk.String()
	s.refunds.Add(1)
	return s.Store.Refund(ctx, store.Key{Name: key}, alg, now, at, n)
}

// A booking whose turn comes before the deadline, but not once the round
// trip is counted, is never left charged and abandoned: the first such
// wait, with no round trip observed yet, gives its booking back at once;
// later ones, which know the store's latency, do not book at all. Either
// way the wait fails with context.DeadlineExceeded, and the key shows only
// the admission made before. Real time, since deadlines are: 4 per second
// (a turn every 250ms), a round trip of 60ms, 280ms left.
func TestWaitCountsTheRoundTrip(t *testing.T) {
	const interval, rtt, left = 250 * time.Millisecond, 60 * time.Millisecond, 280 * time.Millisecond
	s := &latentStore{Store: storememory.New(), rtt: rtt}
	l, err := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(4), Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Bookings given back by the end of each wait: the first wait's, then
	// none more.
	for i, want := range []int64{1, 1} {
		key := fmt.Sprint("k", i)
		if res, err := l.Allow(ctx, key); err != nil || !res.Allowed {
			t.Fatalf("the burst: %+v, %v", res, err)
		}
		short, cancel := context.WithTimeout(ctx, left)
		res, err := l.Wait(short, key)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || res.Allowed || res.RetryAfter <= left-rtt ||
			res.RetryAfter > interval {
			t.Fatalf(
				"wait %d, %v away, with %v left and a %v round trip: %+v, %v; want context.DeadlineExceeded and the wait it needed",
				i,
				interval,
				left,
				rtt,
				res,
				err,
			)
		}
		if got := s.refunds.Load(); got != want {
			t.Fatalf("wait %d: %d bookings given back, want %d", i, got, want)
		}
		if _, err := l.Refund(ctx, key, res, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
			t.Fatalf("wait %d: a refund of the refused wait's Result: %v, want ErrNotAdmitted", i, err)
		}
		// Only the first admission counts: a turn is at most one interval
		// away, not two.
		if p, err := l.PeekN(ctx, key, 1); err != nil || p.Remaining != 0 || p.RetryAfter > interval {
			t.Fatalf("after wait %d was refused: %+v, %v; want nothing charged", i, p, err)
		}
	}
}

// RetryAfter has one meaning on every path of Wait: the shortest wait
// after which the same request would be admitted. With 1s needed and
// 300ms left, the bucket kinds, which book, and the sliding log, which
// retries, report the same 1s.
func TestWaitReportsTheWholeWait(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		algorithms.TokenBucket{Capacity: 1, Refill: algorithms.PerSecond(1)},
		algorithms.SlidingLog{Limit: 1, Window: time.Second},
	} {
		clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
		l, err := ratewise.New(storememory.New(), alg, ratewise.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		l.Allow(context.Background(), "k")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		res, err := l.Wait(ctx, "k")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || res.Allowed || res.RetryAfter != time.Second {
			t.Errorf("%v: a 1s wait with 300ms left: %+v, %v; want context.DeadlineExceeded with RetryAfter 1s", alg, res, err)
		}
		r, err := l.ReserveN(context.Background(), "k", 1, 300*time.Millisecond)
		if books := algo.Reserves(alg); books && (err != nil || r.Result().Allowed || r.Result().RetryAfter != time.Second) {
			t.Errorf("%v: a booking 1s away with 300ms to wait: %+v, %v; want not booked, RetryAfter 1s", alg, r, err)
		}
	}
}
