package contract

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

func scopeIsolation(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "k")
	other := e.limiterIn(e.c.build(e.c.limit, 2*e.c.window), e.clock, l.namespace)
	if res := e.peek(other, "k"); res.Remaining != e.c.limit {
		e.fatalf(
			"the same algorithm with twice the window, after the key was exhausted: Remaining %d, want %d",
			res.Remaining,
			e.c.limit,
		)
	}
	e.exhaust(other, "k")
	same := e.limiterIn(e.c.build(2*e.c.limit, e.c.window), e.clock, l.namespace)
	if res := e.peek(same, "k"); res.Remaining != e.c.limit {
		e.fatalf(
			"the same window with twice the limit, after %d were used: Remaining %d, want %d (the usage is shared)",
			e.c.limit,
			res.Remaining,
			e.c.limit,
		)
	}
}

// quotas are the rates APIs sell, as a count per period.
var quotas = []struct {
	count  int64
	period time.Duration
}{
	{100_000, 24 * time.Hour},
	{1_000_000, 24 * time.Hour},
	{10_000, 30 * 24 * time.Hour},
	{1_000_000_000, time.Second},
	{7, 1500 * time.Millisecond},
	{999_999, 30 * 24 * time.Hour}, // no small lowest terms: exact only through mulDiv
}

func realQuotas(e *env) {
	for _, q := range quotas {
		if q.count > algo.MaxLimit(e.c.kind) {
			continue // such as the compact log, one timestamp per unit
		}
		if e.cfg.sampled && algo.MaxLimit(e.c.kind) < algo.EnvelopeMaxLimit && q.count > 100_000 {
			continue // a log of a million records, checked on the full targets
		}
		alg, err := algo.Nominal(e.c.kind, q.count, q.period, subWindows)
		if err != nil {
			e.fatalf("%d per %v: %v", q.count, q.period, err)
		}
		l := e.limiter(alg)
		m := e.c.model(q.period)
		e.clock.Set(e.c.start)
		real := time.Now()
		check := func(step int, cost int64) ratewise.Result {
			e.t.Helper()
			return e.decideAsModel(l, m, fmt.Sprintf("%d per %v, step %d", q.count, q.period, step), cost)
		}
		// advance moves the clock by d, and by at least the real time since
		// the last call plus 2ms, so that a store whose keys expire in real
		// time (Redis) never drops a key whose state still counts.
		advance := func(d time.Duration) {
			min := time.Since(real).Truncate(time.Microsecond) + 2*time.Millisecond
			real = time.Now()
			e.clock.Advance(max(d, min))
		}
		if res := check(0, q.count); !res.Allowed {
			e.fatalf("%d per %v: the whole limit at once on a fresh key was denied: %+v", q.count, q.period, res)
		}
		rng := rand.New(rand.NewPCG(uint64(q.count), 17))
		// A kind that writes a record per unit (the compact log) takes
		// the whole limit once, above; its other requests weigh at most
		// a few thousand, as its doc advises, so that the rule does not
		// spend minutes writing millions of timestamps.
		most := q.count
		if algo.MaxLimit(e.c.kind) < algo.EnvelopeMaxLimit {
			most = min(most, 5000)
		}
		for step := 1; step < 150; step++ {
			advance(time.Duration(rng.Int64N(int64(q.period) / 8)).Truncate(time.Microsecond))
			cost := rng.Int64N(most + 1)
			if rng.IntN(2) == 0 {
				cost = rng.Int64N(min(q.count, 5) + 1)
			}
			res := check(step, cost)
			if res.Allowed || cost == 0 {
				continue
			}
			// Denied: exactly RetryAfter later, and not 1µs earlier.
			e.clock.Advance(res.RetryAfter - time.Microsecond)
			// (A peek asks for cost 1: Remaining says whether cost would fit.)
			if res := e.peek(l, "k"); res.Remaining >= cost {
				e.fatalf(
					"%d per %v, step %d: %d available 1µs before RetryAfter, enough for cost %d: %+v",
					q.count,
					q.period,
					step,
					res.Remaining,
					cost,
					res,
				)
			}
			e.clock.Advance(time.Microsecond)
			if res := check(step, cost); !res.Allowed {
				e.fatalf(
					"%d per %v, step %d: cost %d denied again after RetryAfter: %+v",
					q.count,
					q.period,
					step,
					cost,
					res,
				)
			}
		}
	}
}

func invalidInput(e *env) {
	ctx := context.Background()
	key := "contract:" + runID + ":" + e.t.Name() + ":k"
	bad := algo.WithQuotaLimit(e.c.alg, 0)
	wantErr := bad.Validate()
	if wantErr == nil {
		e.fatalf("%#v validates", bad)
	}
	sentinel := func(err error) error {
		for _, s := range []error{
			algorithms.ErrInvalidAlgorithm,
			algorithms.ErrInvalidCost,
			algorithms.ErrCostExceedsLimit,
			algorithms.ErrInvalidTime,
		} {
			if errors.Is(err, s) {
				return s
			}
		}
		return nil
	}
	check := func(what string, alg algorithms.Algorithm, now time.Time, cost int64, want error) {
		e.t.Helper()
		res, err := e.store.Decide(ctx, store.Key{Name: key}, alg, now, cost)
		if !errors.Is(err, want) || res.Allowed {
			e.fatalf("Decide with %s: got %+v, %v; want an error matching %v", what, res, err, want)
		}
	}
	check("an invalid algorithm", bad, e.clock.Now(), 1, sentinel(wantErr))
	if err := e.store.Reset(ctx, store.Key{Name: key}, bad); !errors.Is(err, sentinel(wantErr)) {
		e.fatalf("Reset with an invalid algorithm: %v, want an error matching %v", err, sentinel(wantErr))
	}
	// A type that embeds a registered algorithm satisfies the sealed
	// interface, but is not one: no store may run it as if it were.
	embedding := struct{ algorithms.Algorithm }{e.c.alg}
	check("a type embedding the algorithm", embedding, e.clock.Now(), 1, algorithms.ErrInvalidAlgorithm)
	if err := e.store.Reset(ctx, store.Key{Name: key}, embedding); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		e.fatalf("Reset with a type embedding the algorithm: %v, want ErrInvalidAlgorithm", err)
	}
	check(
		"an inspection above the limit",
		e.c.alg,
		e.clock.Now(),
		-algo.MaxCost(e.c.alg)-1,
		algorithms.ErrCostExceedsLimit,
	)
	check("a cost above the limit", e.c.alg, e.clock.Now(), algo.MaxCost(e.c.alg)+1, algorithms.ErrCostExceedsLimit)
	if !e.cfg.storeClock {
		check("a time before 1970", e.c.alg, time.Unix(-1, 0), 1, algorithms.ErrInvalidTime)
		check(
			"a time after MaxUnixMicro",
			e.c.alg,
			time.UnixMicro(algo.EnvelopeMaxUnixMicro).Add(time.Microsecond),
			1,
			algorithms.ErrInvalidTime,
		)
	}
	if res, err := e.store.Decide(ctx, store.Key{Name: key}, e.c.alg, e.clock.Now(), 0); err != nil ||
		res.Remaining != e.c.limit {
		e.fatalf("Peek after the invalid calls: %+v, %v; want Remaining %d", res, err, e.c.limit)
	}
}

// capabilities: what a store declares (store.Store.Capabilities) is what
// it does, and does not change: it says it decides on its own clock
// exactly when it does (the suite's StoreClock targets), so that a layer
// above it, such as package lease, can rely on it.
func capabilities(e *env) {
	caps := e.store.Capabilities()
	if caps.OwnClock != e.cfg.storeClock {
		e.fatalf(
			"Capabilities().OwnClock is %v on a store that decides on %s",
			caps.OwnClock,
			map[bool]string{true: "its own clock", false: "the now it is given"}[e.cfg.storeClock],
		)
	}
	for range 3 {
		if again := e.store.Capabilities(); again != caps {
			e.fatalf("Capabilities() changed: %+v, then %+v", caps, again)
		}
	}
	if !e.cfg.storeClock {
		now := e.clock.Now().Add(-time.Hour).Truncate(time.Microsecond)
		key := store.Key{Name: "contract:" + runID + ":capabilities:" + e.c.alg.Kind().String()}
		if res, err := e.store.Decide(context.Background(), key, e.c.alg, now, 0); err != nil || !res.At.Equal(now) {
			e.fatalf("a store on the caller's time decided an inspection at %v for a now of %v (%v)", res.At, now, err)
		}
	}
}

// zeroNow: the zero now asks for the current time (store.Store's Decide):
// a store on the caller's time decides at the system clock's, read after
// the call began, and one on its own clock at its own. Every method that
// takes a now takes the zero one.
func zeroNow(e *env) {
	ctx := context.Background()
	key := store.Key{Name: "contract:" + runID + ":zero-now:" + e.c.alg.Kind().String()}
	before := time.Now().Truncate(time.Microsecond)
	res, err := e.store.Decide(ctx, key, e.c.alg, time.Time{}, 1)
	if err != nil || !res.Allowed {
		e.fatalf("Decide at the zero now: %+v, %v; want an admission", res, err)
	}
	if !e.cfg.storeClock && (res.At.Before(before) || res.At.After(time.Now())) {
		e.fatalf("Decide at the zero now: At %v, want the system clock's, from %v", res.At, before)
	}
	if algo.Reserves(e.c.alg) {
		if res, _, err := e.store.Reserve(ctx, key, e.c.alg, time.Time{}, 1, 0); err != nil || !res.Allowed {
			e.fatalf("Reserve at the zero now: %+v, %v; want an admission", res, err)
		}
	}
	if !e.cfg.storeClock {
		if back, err := e.store.Refund(ctx, key, e.c.alg, time.Time{}, res.At, 1); err != nil || back.Remaining < 1 {
			e.fatalf("Refund at the zero now: %+v, %v; want the unit back", back, err)
		}
	}
	if got, err := e.store.DecideSet(ctx, key, []algorithms.Algorithm{e.c.alg}, time.Time{}, 0); err != nil ||
		len(got) != 1 {
		e.fatalf("DecideSet at the zero now: %+v, %v", got, err)
	}
}

func hotKeyRealClock(e *env) {
	const limit, window, goroutines = 100, 100 * time.Millisecond, 64
	const run = 300 * time.Millisecond
	alg := e.c.build(limit, window)
	l := e.limiterOn(alg, nil) // nil: the system clock
	var (
		mu       sync.Mutex
		admitted []event
		calls    atomic.Int64
		wg       sync.WaitGroup
	)
	errs := make(chan error, goroutines)
	// The run lasts at least run and until the key has seen 3 limits'
	// worth of calls, so that a slow store (a Lua interpreter in Go under
	// the race detector, sharing the machine with other targets) still
	// reaches the limit; at most 20s.
	start := time.Now()
	going := func() bool {
		since := time.Since(start)
		return since < run || calls.Load() < 3*limit && since < 20*time.Second
	}
	for range goroutines {
		wg.Go(func() {
			for going() {
				res, err := l.Allow(context.Background(), "hot")
				if err != nil {
					errs <- err
					return
				}
				calls.Add(1)
				if res.Allowed {
					mu.Lock()
					admitted = append(admitted, event{at: res.At, cost: 1})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.fatalf("Allow: %v", err)
	}
	// Replay the admissions in the order of the times they were made at
	// through the naive model: every one must be one it admits.
	slices.SortStableFunc(admitted, func(a, b event) int { return a.at.Compare(b.at) })
	m := e.c.model(window)
	for i, ev := range admitted {
		if ok, _ := m.decide(alg, ev.at, ev.cost); !ok {
			e.fatalf(
				"admission %d of %d, made at %s, is beyond the bound: the algorithm's semantics deny it",
				i+1,
				len(admitted),
				ev.at.Format(time.RFC3339Nano),
			)
		}
	}
	if len(admitted) < limit {
		e.fatalf(
			"only %d admitted in %v with a limit of %d per %v",
			len(admitted),
			time.Since(start).Round(time.Millisecond),
			limit,
			window,
		)
	}
	if most, bound := maxInWindow(admitted, window), e.c.windowBound(admitted, limit, window); most > bound {
		e.fatalf("%d admitted within %v, over the documented bound %d", most, window, bound)
	}
	e.t.Logf(
		"%s: %d calls, %d admitted in at least %v; the most in any %v: %d (limit %d, the algorithm's bound %d); 0 "+
			"admissions beyond its semantics",
		e.t.Name(),
		calls.Load(),
		len(admitted),
		run,
		window,
		maxInWindow(admitted, window),
		limit,
		e.c.windowBound(admitted, limit, window),
	)
}

// staleAfterExpiry: a request whose clock reading is behind one that found
// the key's state expired still sees that state. Limit requests at start;
// an inspection 10ms after the key is back at full capacity; then a request
// 10ms before it, which must be decided as the algorithm decides with the
// state, not as on an idle key.
func staleAfterExpiry(e *env) {
	l := e.limiter(e.c.alg)
	var model algo.State
	for range e.c.limit {
		e.allow(l, "k")
		model, _ = algo.Decide(e.c.alg, model, e.clock.Now(), 1)
	}
	full := e.peek(l, "k").ResetAfter
	e.clock.Advance(full + 10*time.Millisecond)
	if res := e.peek(l, "k"); res.Remaining != e.c.limit {
		e.fatalf("10ms after ResetAfter: %+v, want full", res)
	}
	e.clock.Advance(-20 * time.Millisecond)
	_, want := algo.Decide(e.c.alg, model, e.clock.Now(), 1)
	if got := e.allow(l, "k"); got.Allowed != want.Allowed || got.Remaining != want.Remaining ||
		got.RetryAfter != want.RetryAfter {
		e.fatalf(
			"10ms before ResetAfter, after a later inspection: got %+v, want %+v (the state still counts)",
			got,
			want,
		)
	}
}

// twoClocks: two limiters with clocks minutes apart share a store. One
// spends a key; the other then decides the same key under other windows
// (other states beside it, which a store that keeps state by key keeps
// together) 200 times, admitted, with readings past the first key's
// lifetime and grace. Expiry that a single reading can trigger would drop the first
// key's live state; the first limiter's next request must be decided as if
// the other had never run.
func twoClocks(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "k")
	var twin algo.State
	for range e.c.limit {
		twin, _ = algo.Decide(e.c.alg, twin, e.clock.Now(), 1)
	}
	ahead := ratewisetest.NewClock(e.clock.Now().Add(e.c.fullBack + 10*time.Minute))
	for i := range 200 {
		// Admitted, so that each writes, as a busy neighbour does.
		other := e.limiterIn(e.c.build(1000, e.c.window*time.Duration(2+i%4)), ahead, l.namespace)
		if res := e.allow(other, "k"); !res.Allowed {
			e.fatalf("request %d of the other limiter: %+v, want admitted", i, res)
		}
	}
	e.clock.Advance(time.Second)
	_, want := algo.Decide(e.c.alg, twin, e.clock.Now(), 1)
	if got := e.allow(l, "k"); got != want {
		e.fatalf(
			"the first limiter's key after the other's 200 decisions beside it, 10 minutes ahead: %+v, want %+v, as alone",
			got,
			want,
		)
	}
}
