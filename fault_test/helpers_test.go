// Package fault_test is the fault suite: storeredis under load while a
// real redis-server is killed, stalled, flushed of its scripts or starved
// of connections, checking that every failure is a typed error, that no
// decision that failed is reported as allowed, and that decisions resume.
// Every test starts its own throwaway servers on free loopback ports
// (internal/testkit/redistest), is bounded to a few seconds, and logs its
// measurements on one line starting with "figures:".
package fault_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
)

// margin is how late past its bound a call may return on a loaded 2-core
// machine under -race.
const margin = 150 * time.Millisecond

// clientOptions are the recommended client settings (docs/redis.md, "Client
// settings") for a budget of a few hundred milliseconds per decision.
func clientOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           100 * time.Millisecond,
		DialerRetries:         1,
		DialerRetryTimeout:    10 * time.Millisecond,
		ReadTimeout:           200 * time.Millisecond,
		WriteTimeout:          200 * time.Millisecond,
		PoolTimeout:           200 * time.Millisecond,
	}
}

func newClient(t *testing.T, o *redis.Options) *redis.Client {
	t.Helper()
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

// startServer starts a throwaway server for one test; debuggable servers
// accept DEBUG SLEEP.
func startServer(t *testing.T, debuggable bool) *redistest.Server {
	t.Helper()
	redistest.Require(t)
	start := redistest.Start
	if debuggable {
		start = func(...string) (*redistest.Server, error) { return redistest.StartDebuggable() }
	}
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// newLimiter is a limiter that admits nearly everything the load here
// sends, so that decisions are mostly admissions.
func newLimiter(t *testing.T, s store.Store) *ratewise.Limiter {
	t.Helper()
	l, err := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(1000), Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// tally counts decisions and errors by class from many goroutines, and
// keeps the first few rule violations to report.
type tally struct {
	// deadlines is whether callers use deadlines of their own, so that a
	// context error is theirs; under context.Background() it is a bug.
	deadlines bool

	calls, allowed, denied                     atomic.Int64
	unavailable, deadline, canceled, other     atomic.Int64
	poolTimeouts, erredAllowed, violationCount atomic.Int64
	maxLatency                                 atomic.Int64 // nanoseconds
	lastOK                                     atomic.Int64 // UnixNano of the latest success

	mu         sync.Mutex
	violations []string
	slowestErr string // the error of the slowest call that failed
	slowestDur time.Duration
}

// record counts one call, which took elapsed.
func (ty *tally) record(res ratewise.Result, err error, elapsed time.Duration) {
	ty.calls.Add(1)
	for {
		m := ty.maxLatency.Load()
		if int64(elapsed) <= m || ty.maxLatency.CompareAndSwap(m, int64(elapsed)) {
			break
		}
	}
	if err == nil {
		ty.lastOK.Store(time.Now().UnixNano())
		if res.Allowed {
			ty.allowed.Add(1)
		} else {
			ty.denied.Add(1)
		}
		return
	}
	ty.mu.Lock()
	if elapsed > ty.slowestDur {
		ty.slowestDur, ty.slowestErr = elapsed, err.Error()
	}
	ty.mu.Unlock()
	if res != (ratewise.Result{}) {
		ty.erredAllowed.Add(1)
		ty.violate("a decision that failed returned a result: %+v, %v", res, err)
	}
	if errors.Is(err, redis.ErrPoolTimeout) {
		ty.poolTimeouts.Add(1)
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		ty.deadline.Add(1)
		if !ty.deadlines {
			ty.violate("a context error with no deadline set: %v", err)
		}
	case errors.Is(err, context.Canceled):
		ty.canceled.Add(1)
		if !ty.deadlines {
			ty.violate("a context error with no deadline set: %v", err)
		}
	case errors.Is(err, store.ErrUnavailable):
		ty.unavailable.Add(1)
	default:
		ty.other.Add(1)
		ty.violate("an error that is neither store.ErrUnavailable nor the caller's context error: %v", err)
	}
}

func (ty *tally) violate(format string, args ...any) {
	ty.violationCount.Add(1)
	ty.mu.Lock()
	defer ty.mu.Unlock()
	if len(ty.violations) < 5 {
		ty.violations = append(ty.violations, fmt.Sprintf(format, args...))
	}
}

func (ty *tally) errors() int64 {
	return ty.unavailable.Load() + ty.deadline.Load() + ty.canceled.Load() + ty.other.Load()
}

// check fails t if any call broke the error contract.
func (ty *tally) check(t *testing.T) {
	t.Helper()
	if n := ty.violationCount.Load(); n > 0 {
		ty.mu.Lock()
		defer ty.mu.Unlock()
		t.Errorf("%d calls broke the error contract (errors typed, never allowed); first ones:\n%s",
			n, strings.Join(ty.violations, "\n"))
	}
}

// figures is the tally as key=value pairs for the "figures:" line.
func (ty *tally) figures() string {
	ty.mu.Lock()
	slowest := ty.slowestErr
	ty.mu.Unlock()
	return fmt.Sprintf(
		"calls=%d allowed=%d denied=%d err_unavailable=%d err_deadline=%d err_canceled=%d err_other=%d "+
			"pool_timeouts=%d erred_nonzero=%d max_latency=%v slowest_err=%q",
		ty.calls.Load(),
		ty.allowed.Load(),
		ty.denied.Load(),
		ty.unavailable.Load(),
		ty.deadline.Load(),
		ty.canceled.Load(),
		ty.other.Load(),
		ty.poolTimeouts.Load(),
		ty.erredAllowed.Load(),
		time.Duration(ty.maxLatency.Load()).Round(time.Microsecond),
		slowest,
	)
}

// load runs n goroutines that each call decide in a loop until stop is
// closed, recording every call in ty, and returns a function that waits
// for them. Goroutine i passes i to decide, to pick its keys.
func load(n int, ty *tally, stop <-chan struct{}, decide func(i int) (ratewise.Result, error)) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				res, err := decide(i)
				ty.record(res, err, time.Since(start))
				if err != nil {
					// Errors come back fast while the server is down; a
					// pause keeps the loop from starving the test on two cores.
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
	return wg.Wait
}

// waitFor polls cond every few milliseconds until it holds or timeout
// passes, and reports whether it held.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// withDeadline calls decide under a context that ends after d.
func withDeadline(
	d time.Duration,
	decide func(ctx context.Context) (ratewise.Result, error),
) (ratewise.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return decide(ctx)
}
