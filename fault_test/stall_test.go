package fault_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// stall has Redis sleep for d (DEBUG SLEEP, which blocks its event loop)
// from a client of its own, and returns a channel that is sent the time the
// sleep ended, or closed if DEBUG failed (the error then in *err).
func stall(t *testing.T, srv *redistest.Server, d time.Duration, errp *error) <-chan time.Time {
	admin := newClient(t, &redis.Options{Addr: srv.Addr, ReadTimeout: d + 5*time.Second, MaxRetries: -1})
	if err := admin.Ping(context.Background()).Err(); err != nil { // dial before the stall
		t.Fatal(err)
	}
	ended := make(chan time.Time, 1)
	go func() {
		if err := admin.Do(context.Background(), "DEBUG", "SLEEP", d.Seconds()).Err(); err != nil {
			*errp = err
			close(ended)
			return
		}
		ended <- time.Now()
	}()
	return ended
}

// TestStalledServer: Redis stalls for 1 s (DEBUG SLEEP 1) under callers
// with 100 ms deadlines. Every call returns by its deadline plus a margin,
// with the caller's context error (never store.ErrUnavailable: the
// deadline is the caller's) and never as allowed, and decisions succeed again once the stall ends.
func TestStalledServer(t *testing.T) {
	const deadline = 100 * time.Millisecond
	srv := startServer(t, true)
	// The client's own timeouts are the backstop of callers without a
	// deadline, here 500 ms; these callers' deadlines are tighter, and
	// only ContextTimeoutEnabled makes the socket keep them.
	o := clientOptions(srv.Addr)
	o.ReadTimeout, o.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	rdb := newClient(t, o)
	lim := newLimiter(t, storeredis.New(rdb))
	decide := func(key string) (ratewise.Result, error) {
		return withDeadline(deadline, func(ctx context.Context) (ratewise.Result, error) { return lim.Allow(ctx, key) })
	}
	if _, err := decide("stall:warm"); err != nil {
		t.Fatal(err)
	}

	var stallErr error
	ended := stall(t, srv, time.Second, &stallErr)
	stallBegan := time.Now()
	time.Sleep(20 * time.Millisecond) // let DEBUG SLEEP reach Redis
	ty := &tally{deadlines: true}
	stop := make(chan struct{})
	wait := load(8, ty, stop, func(i int) (ratewise.Result, error) { return decide(fmt.Sprintf("stall:%d", i)) })
	time.Sleep(700 * time.Millisecond)
	close(stop)
	wait()
	stalled := ty.figures()
	stallEnd, ok := <-ended
	if !ok {
		t.Fatalf("DEBUG SLEEP: %v", stallErr)
	}

	ty2 := &tally{deadlines: true}
	recovered := waitFor(3*time.Second, func() bool {
		start := time.Now()
		res, err := decide("stall:after")
		ty2.record(res, err, time.Since(start))
		return err == nil
	})
	recovery := time.Since(stallEnd)

	t.Logf(
		"figures: during_stall{%s} stall=%v after_stall{%s} recovery=%v deadline=%v bound=%v",
		stalled,
		stallEnd.Sub(stallBegan).Round(time.Millisecond),
		ty2.figures(),
		recovery.Round(time.Millisecond),
		deadline,
		deadline+margin,
	)
	ty.check(t)
	ty2.check(t)
	if got, max := time.Duration(ty.maxLatency.Load()), deadline+margin; got > max {
		t.Errorf("a call on the stalled server took %v, want at most %v (its deadline plus a margin)", got, max)
	}
	if ty.errors() == 0 {
		t.Errorf("no call failed while Redis slept, so the stall was not tested")
	}
	// Every caller had a deadline shorter than the client's own timeouts:
	// each failure is the caller's deadline, not a store outage.
	if n := ty.unavailable.Load(); n > 0 {
		t.Errorf(
			"%d calls that ran out of their own deadline came back as store.ErrUnavailable, want context.DeadlineExceeded",
			n,
		)
	}
	if !recovered {
		t.Errorf("no decision succeeded within 3s after the stall ended")
	}
}
