package contract

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/store"
)

func reset(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "k")
	if err := l.Reset(context.Background(), "k"); err != nil {
		e.fatalf("Reset: %v", err)
	}
	if res := e.peek(l, "k"); res.Remaining != e.c.limit || res.ResetAfter != 0 {
		e.fatalf("Peek after Reset: got %+v, want Remaining %d and ResetAfter 0", res, e.c.limit)
	}
	if got := e.count(l, "k"); got != e.c.limit {
		e.fatalf("after Reset: %d admitted, want %d", got, e.c.limit)
	}
	if err := l.Reset(context.Background(), "never-used"); err != nil {
		e.fatalf("Reset of an unknown key: %v", err)
	}
}

func keyParts(e *env) {
	ctx, alg, now := context.Background(), e.c.alg, e.clock.Now()
	ns := "contract"
	name := runID + ":" + e.t.Name() + ":a:b"
	joined := store.Key{Namespace: ns, Name: name}.String()
	cut := len(name) - 2 // name[:cut] + ":b" is name
	splits := []store.Key{
		{Namespace: ns, Name: name},
		{Namespace: ns + ":" + name[:cut], Name: "b"},
		{Name: joined},
		{Namespace: ns + ":" + runID, Name: name[len(runID)+1:]},
	}
	for i, k := range splits {
		res, err := e.store.Decide(ctx, k, alg, now, 1)
		if err != nil {
			e.fatalf("split %d (%+v): %v", i, k, err)
		}
		if want := e.c.limit - int64(i) - 1; !res.Allowed || res.Remaining != want {
			e.fatalf("split %d (%+v), request %d on one key: %+v, want admitted with Remaining %d", i, k, i+1, res, want)
		}
	}
	other := store.Key{Namespace: ns + "x", Name: name}
	if res, err := e.store.Decide(ctx, other, alg, now, 0); err != nil || res.Remaining != e.c.limit {
		e.fatalf("another namespace, the same name: %+v, %v; want Remaining %d", res, err, e.c.limit)
	}
	if rf := e.store; !e.cfg.storeClock {
		res, err := e.store.Decide(ctx, splits[0], alg, now, 1)
		if err != nil || !res.Allowed {
			e.fatalf("a fifth request: %+v, %v", res, err)
		}
		if _, err := rf.Refund(ctx, splits[1], alg, now, res.At, 1); err != nil {
			e.fatalf("Refund of the fifth request, split another way: %v", err)
		}
		if res, _ := e.store.Decide(ctx, splits[2], alg, now, 0); res.Remaining != e.c.limit-4 {
			e.fatalf("after refunding the fifth request split another way: Remaining %d, want %d", res.Remaining, e.c.limit-4)
		}
	}
	if err := e.store.Reset(ctx, splits[3], alg); err != nil {
		e.fatalf("Reset: %v", err)
	}
	if res, _ := e.store.Decide(ctx, splits[0], alg, now, 0); res.Remaining != e.c.limit {
		e.fatalf("after a Reset of the key split another way: Remaining %d, want %d", res.Remaining, e.c.limit)
	}
}

func keyIsolation(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "a")
	for _, k := range []string{"b", "a:b", "a\x00", "A", "{a}", "a ", "\xff"} {
		if res := e.peek(l, k); res.Remaining != e.c.limit {
			e.fatalf("key %q after exhausting %q: Remaining %d, want %d", k, "a", res.Remaining, e.c.limit)
		}
	}
	if res := e.peek(e.limiter(e.c.alg), "a"); res.Remaining != e.c.limit {
		e.fatalf("same key under another prefix: Remaining %d, want %d", res.Remaining, e.c.limit)
	}
	// Same prefixed key, other algorithms.
	for _, other := range e.cases {
		if other.name == e.c.name {
			continue
		}
		o := e.limiterIn(other.alg, e.clock, l.namespace)
		if res := e.peek(o, "a"); res.Remaining != other.limit {
			e.fatalf("%s on the same prefixed key: Remaining %d, want %d", other.name, res.Remaining, other.limit)
		}
	}
}

func resultFields(e *env) {
	l := e.limiter(e.c.alg)
	rng := rand.New(rand.NewPCG(3, 4))
	for step := range 400 {
		e.clock.Advance(time.Duration(rng.Int64N(int64(3*time.Second))) / time.Microsecond * time.Microsecond)
		n := 1 + rng.Int64N(e.c.limit)
		if rng.IntN(2) == 0 {
			n = 1
		}
		res := e.allowN(l, "k", n)
		switch {
		case res.Limit != e.c.limit:
			e.fatalf("step %d: Limit %d, want %d", step, res.Limit, e.c.limit)
		case res.Remaining < 0 || res.Remaining > e.c.limit:
			e.fatalf("step %d: Remaining %d outside [0, %d]", step, res.Remaining, e.c.limit)
		case res.Allowed != (res.RetryAfter == 0) || res.RetryAfter < 0:
			e.fatalf("step %d: Allowed %v with RetryAfter %v", step, res.Allowed, res.RetryAfter)
		case res.ResetAfter < 0 || (res.Allowed && res.ResetAfter == 0):
			e.fatalf("step %d: ResetAfter %v after Allowed %v", step, res.ResetAfter, res.Allowed)
		case res.At.Before(e.clock.Now()):
			e.fatalf("step %d: At %v before now %v", step, res.At, e.clock.Now())
		case res.Allowed && res.Remaining > e.c.limit-n:
			e.fatalf("step %d: Remaining %d after admitting %d of %d", step, res.Remaining, n, e.c.limit)
		}
		if res.Allowed {
			continue
		}
		// The wait is the shortest: not 1µs earlier (checked with Peek, which
		// consumes nothing, for cost 1), but exactly then.
		e.clock.Advance(res.RetryAfter - time.Microsecond)
		if n == 1 {
			if p := e.peek(l, "k"); p.Allowed {
				e.fatalf("step %d: admitted 1µs before RetryAfter %v: %+v", step, res.RetryAfter, p)
			}
		}
		e.clock.Advance(time.Microsecond)
		if again := e.allowN(l, "k", n); !again.Allowed {
			e.fatalf("step %d: cost %d denied again after waiting RetryAfter %v: %+v", step, n, res.RetryAfter, again)
		}
	}
}

func stateExpiry(e *env) {
	l := e.limiter(e.c.alg)
	e.allow(l, "k")
	e.clock.Advance(time.Second)
	res := e.allowN(l, "k", 2)
	if res.ResetAfter <= 0 {
		e.fatalf("ResetAfter %v after an admission", res.ResetAfter)
	}
	if reporter, ok := e.store.(ttlReporter); ok {
		ttl, err := reporter.TTL(context.Background(), store.Key{Name: l.prefix + "k"}, e.c.alg, e.clock.Now())
		if err != nil {
			e.fatalf("TTL: %v", err)
		}
		// Stores with millisecond expiry may round up to the next ms, and
		// add one, for a millisecond clock that lags their own reading (see
		// the Redis store's keys).
		if ceil := res.ResetAfter.Truncate(time.Millisecond) + 2*time.Millisecond + e.cfg.grace; ttl <= 0 || ttl > ceil {
			e.fatalf("store keeps the state for %v, want (0, %v] for ResetAfter %v", ttl, ceil, res.ResetAfter)
		}
	}
	e.clock.Advance(res.ResetAfter)
	if p := e.peek(l, "k"); p.Remaining != e.c.limit || p.ResetAfter != 0 {
		e.fatalf("ResetAfter %v later: got %+v, want Remaining %d and ResetAfter 0", res.ResetAfter, p, e.c.limit)
	}
}

func concurrency(e *env) {
	const limit = 100
	l := e.limiter(e.c.build(limit, e.c.window))
	if got := e.hammer(func() (bool, error) {
		res, err := l.Allow(context.Background(), "hot")
		return res.Allowed, err
	}); got != limit {
		e.fatalf("%d goroutines × %d tries admitted %d, want exactly %d", hammerGoroutines, hammerTries, got, limit)
	}
}

const hammerGoroutines, hammerTries = 64, 4

// hammer runs allow hammerTries times in each of hammerGoroutines
// goroutines at once, fails the rule on any error, and returns how many
// calls were admitted.
func (e *env) hammer(allow func() (bool, error)) int64 {
	e.t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, hammerGoroutines*hammerTries)
	for range hammerGoroutines {
		wg.Go(func() {
			for range hammerTries {
				ok, err := allow()
				if err != nil {
					errs <- err
					return
				}
				if ok {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.fatalf("Allow from many goroutines: %v", err)
	}
	return admitted.Load()
}

func clockStepsBack(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "k")
	// 40s back crosses into the previous minute and sub-window.
	const back = 40 * time.Second
	e.clock.Advance(-back)
	res := e.allow(l, "k")
	if want := e.c.firstBack + back; res.Allowed || res.Remaining != 0 || res.RetryAfter != want {
		e.fatalf("%v back after exhausting: got %+v, want denied, Remaining 0, RetryAfter %v", back, res, want)
	}
	e.clock.Advance(res.RetryAfter - time.Microsecond)
	if res := e.allow(l, "k"); res.Allowed {
		e.fatalf("admitted 1µs before RetryAfter: %+v", res)
	}
	e.clock.Advance(time.Microsecond)
	if res := e.allow(l, "k"); !res.Allowed {
		e.fatalf("denied after RetryAfter: %+v", res)
	}
}

func contextCancelled(e *env) {
	l := e.limiter(e.c.alg)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, context.Canceled) {
		e.fatalf("Allow with a cancelled context: err %v, want context.Canceled", err)
	}
	if res := e.peek(l, "k"); res.Remaining != e.c.limit {
		e.fatalf("after a cancelled Allow: Remaining %d, want %d", res.Remaining, e.c.limit)
	}
}
