package contract

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// partner returns a second limit for a set with the case's algorithm: of
// another kind, per hour, admitting half the case's limit at once.
func (e *env) partner(limit int64) algorithms.Algorithm {
	name := "gcra"
	if e.c.kind.String() == "gcra" {
		name = "sliding_log"
	}
	k, err := algorithms.Lookup(name)
	if err != nil {
		e.t.Fatal(err)
	}
	alg, err := algo.Nominal(k, limit, time.Hour, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return alg
}

// set returns a Stack of algs on the store under test, on the suite's clock,
// in a namespace of its own, and a Limiter for each algorithm in the same
// namespace, to inspect what the set charged.
func (e *env) set(algs ...algorithms.Algorithm) (*ratewise.Stack, []lim) {
	e.t.Helper()
	one := e.limiter(algs[0])
	lims := []lim{one}
	for _, alg := range algs[1:] {
		lims = append(lims, e.limiterIn(alg, e.clock, one.namespace))
	}
	s, err := ratewise.NewStack(e.store, algs, ratewise.WithClock(e.clock), ratewise.WithNamespace(one.namespace))
	if err != nil {
		e.fatalf("NewStack: %v", err)
	}
	return s, lims
}

// setAllOrNothing: the case's limit L and a partner admitting L/2 per hour.
func setAllOrNothing(e *env) {
	ctx := context.Background()
	half := max(e.c.limit/2, 1)
	s, lims := e.set(e.c.alg, e.partner(half))
	var admitted int64
	for ; admitted <= e.c.limit; admitted++ {
		res, err := s.Allow(ctx, "k")
		if err != nil {
			e.fatalf("Allow: %v", err)
		}
		if !res.Allowed {
			// The partner binds; the case's limit would admit and is not
			// charged for the denial.
			if res.Binding != 1 || res.Results[1].Allowed || !res.Results[0].Allowed ||
				res.Results[0].Remaining != e.c.limit-half || res.RetryAfter != res.Results[1].RetryAfter || res.RetryAfter <= 0 {
				e.fatalf(
					"the denial after %d: %+v; want the partner binding and the case's limit at Remaining %d",
					admitted,
					res,
					e.c.limit-half,
				)
			}
			break
		}
	}
	if admitted != half {
		e.fatalf("the set admitted %d at one instant, want %d, the partner's limit", admitted, half)
	}
	// Ten more denials charge nothing.
	for range 10 {
		if res, err := s.Allow(ctx, "k"); err != nil || res.Allowed {
			e.fatalf("a request over the partner's limit: %+v, %v", res, err)
		}
	}
	if got := e.peek(lims[0], "k"); got.Remaining != e.c.limit-half {
		e.fatalf(
			"the case's limit after %d admitted and 11 denied by the set: Remaining %d, want %d",
			half,
			got.Remaining,
			e.c.limit-half,
		)
	}
	if got := e.peek(lims[1], "k"); got.Remaining != 0 {
		e.fatalf("the partner after the set used it up: Remaining %d, want 0", got.Remaining)
	}
	// PeekN answers for a cost of n what AllowN(n) then gets, and charges
	// nothing.
	if _, err := s.AllowN(ctx, "p", 1); err != nil {
		e.fatalf("AllowN: %v", err)
	}
	peeked, err := s.PeekN(ctx, "p", half)
	if err != nil {
		e.fatalf("PeekN: %v", err)
	}
	if half > 1 {
		if fits, err := s.PeekN(ctx, "p", half-1); err != nil || !fits.Allowed {
			e.fatalf("PeekN(%d) with %d left: %+v, %v; want allowed", half-1, half-1, fits, err)
		}
	}
	if got, err := s.AllowN(ctx, "p", half); err != nil || got.Allowed != peeked.Allowed ||
		got.RetryAfter != peeked.RetryAfter ||
		got.Binding != peeked.Binding ||
		peeked.Allowed {
		e.fatalf("PeekN(%d) said %+v, AllowN(%d) then got %+v, %v", half, peeked, half, got, err)
	}

	// Waiting exactly RetryAfter is enough, and a microsecond less is not.
	res, _ := s.PeekN(ctx, "k", 1)
	e.clock.Advance(res.RetryAfter - time.Microsecond)
	if res, err := s.Allow(ctx, "k"); err != nil || res.Allowed {
		e.fatalf("1µs before RetryAfter: %+v, %v; want denied", res, err)
	}
	e.clock.Advance(time.Microsecond)
	if res, err := s.Allow(ctx, "k"); err != nil || !res.Allowed {
		e.fatalf("after RetryAfter: %+v, %v; want admitted", res, err)
	}

	// The other way round: exhaust the case's limit alone, then the set's
	// requests charge the partner nothing.
	e.clock.Set(e.c.start)
	s, lims = e.set(e.c.alg, e.partner(2*e.c.limit))
	e.exhaust(lims[0], "j")
	res, err = s.Allow(ctx, "j")
	if err != nil || res.Allowed || res.Binding != 0 || res.Results[1].Remaining != 2*e.c.limit {
		e.fatalf("a set over an exhausted limit: %+v, %v; want denied by it, the partner at %d", res, err, 2*e.c.limit)
	}
	// A cost that only one limit can take is denied whole.
	if res, err := s.AllowN(ctx, "fresh", e.c.limit+1); !errors.Is(err, algorithms.ErrCostExceedsLimit) {
		e.fatalf("a cost above the smallest limit: %+v, %v; want ErrCostExceedsLimit", res, err)
	}
	if got := e.peek(lims[1], "j"); got.Remaining != 2*e.c.limit {
		e.fatalf("the partner after the set was denied: Remaining %d, want %d", got.Remaining, 2*e.c.limit)
	}
}

// setConcurrency: 64 goroutines on one key through a set charge every
// limit exactly for what the set admitted.
func setConcurrency(e *env) {
	const limit = 40
	s, lims := e.set(e.c.build(limit, e.c.window), e.partner(limit/2))
	if got := e.hammer(func() (bool, error) {
		res, err := s.Allow(context.Background(), "hot")
		return res.Allowed, err
	}); got != limit/2 {
		e.fatalf("%d goroutines × %d tries admitted %d, want exactly %d", hammerGoroutines, hammerTries, got, limit/2)
	}
	if got := e.peek(lims[0], "hot"); got.Remaining != limit-limit/2 {
		e.fatalf(
			"the set's first limit after the burst: Remaining %d, want %d: a denied request was charged",
			got.Remaining,
			limit-limit/2,
		)
	}
}

// setInvalid: two limits of one kind and scope share a state, which a set
// refuses.
func setInvalid(e *env) {
	sd := e.store
	twin := algo.WithQuotaLimit(e.c.alg, 2*e.c.limit)
	k, algs := store.Key{Name: "contract:" + runID + ":set"}, []algorithms.Algorithm{e.c.alg, twin}
	if _, err := sd.DecideSet(context.Background(), k, algs, e.clock.Now(), 1); !errors.Is(
		err,
		algorithms.ErrInvalidAlgorithm,
	) {
		e.fatalf("a set of two limits sharing one state: %v, want ErrInvalidAlgorithm", err)
	}
}

// reservations: booking ahead (store.Store.Reserve) decides exactly as the
// algorithm's Reserve: the burst goes at once, each later booking waits one
// interval more, up to the longest wait accepted; a booking past it charges
// nothing and reports the wait until its turn; requests then wait behind
// the bookings. An algorithm that cannot
// book is refused with ErrUnsupported.
func reservations(e *env) {
	rs := e.store
	ctx := context.Background()
	l := e.limiter(e.c.alg)
	key := l.prefix + "k"
	if !algo.Reserves(e.c.alg) {
		if _, _, err := rs.Reserve(ctx, store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, time.Minute); !errors.Is(
			err,
			store.ErrUnsupported,
		) {
			e.fatalf("Reserve with an algorithm that cannot book: %v, want ErrUnsupported", err)
		}
		return
	}
	var model algo.State
	for i := range 2*e.c.limit + 2 {
		want, wantDelay := algorithms.Result{}, time.Duration(0)
		model, want, wantDelay = algo.Reserve(e.c.alg, model, e.clock.Now(), 1, e.c.window)
		got, delay, err := rs.Reserve(ctx, store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, e.c.window)
		if err != nil || got != want || delay != wantDelay {
			e.fatalf("booking %d: %+v, delay %v, %v; want %+v, delay %v", i+1, got, delay, err, want, wantDelay)
		}
		// The burst at once, then one interval more per booking, up to a
		// window's wait; past it, nothing is booked, and RetryAfter is
		// the wait until the request's turn, a window and an interval.
		if i < e.c.limit && (!got.Allowed || delay != 0) ||
			i >= e.c.limit && i < 2*e.c.limit && (!got.Allowed || delay != e.c.costBack(i-e.c.limit+1)) ||
			i >= 2*e.c.limit && (got.Allowed || got.RetryAfter != e.c.window+e.c.costBack(1)) {
			e.fatalf("booking %d at one instant: %+v, delay %v", i+1, got, delay)
		}
	}
	// A request now waits behind every booking.
	_, want := algo.Decide(e.c.alg, model, e.clock.Now(), 1)
	if got := e.allow(l, "k"); got != want || got.Allowed {
		e.fatalf("a request behind the bookings: %+v, want %+v", got, want)
	}
	if _, _, err := rs.Reserve(ctx, store.Key{Name: key}, e.c.alg, e.clock.Now(), 1, -time.Second); !errors.Is(
		err,
		algorithms.ErrInvalidTime,
	) {
		e.fatalf("a negative longest wait: %v, want algorithms.ErrInvalidTime", err)
	}
}

// leases: a store that leases (store.Store.Lease) books a lease as Reserve
// books for the buckets and decides it as Decide does for the fixed window,
// and refuses other algorithms and costs below 1. An admitted lease leaves
// a mark, a copy of the state: a Reset puts the latest mark back, so that
// what it charged stays charged and what came after it is forgotten, and a
// Reset once the mark's state stopped counting leaves the key full. A
// denied lease leaves the mark as it was.
func leases(e *env) {
	ls := e.store
	ctx := context.Background()
	l := e.limiter(e.c.alg)
	key := store.Key{Namespace: l.namespace, Name: "k"}
	if f := algo.FamilyOf(e.c.kind); f == algo.FamilyLog || f == algo.FamilyCalendar {
		if _, _, err := ls.Lease(ctx, key, e.c.alg, e.clock.Now(), 1, 0); !errors.Is(err, store.ErrUnsupported) {
			e.fatalf("Lease with an algorithm that cannot lease: %v, want ErrUnsupported", err)
		}
		return
	}
	if _, _, err := ls.Lease(ctx, key, e.c.alg, e.clock.Now(), 0, 0); !errors.Is(err, algorithms.ErrInvalidCost) {
		e.fatalf("a lease of 0 units: %v, want ErrInvalidCost", err)
	}
	// What the store does is what the algorithm's own steps do, with the
	// mark a copy of the state an admitted lease left.
	var model, mark algo.State
	lease := func(n int64, maxWait time.Duration) algorithms.Result {
		e.t.Helper()
		var want algorithms.Result
		var wantDelay time.Duration
		if algo.Reserves(e.c.alg) {
			model, want, wantDelay = algo.Reserve(e.c.alg, model, e.clock.Now(), n, maxWait)
		} else {
			model, want = algo.Decide(e.c.alg, model, e.clock.Now(), n)
		}
		got, delay, err := ls.Lease(ctx, key, e.c.alg, e.clock.Now(), n, maxWait)
		if err != nil || got != want || delay != wantDelay {
			e.fatalf(
				"Lease(%d, %v) at %s: %+v, delay %v, %v; want %+v, delay %v",
				n,
				maxWait,
				e.at(),
				got,
				delay,
				err,
				want,
				wantDelay,
			)
		}
		if want.Allowed {
			mark = algo.Clone(e.c.alg, model)
		}
		return got
	}
	decide := func(what string, cost int64) {
		e.t.Helper()
		var want algorithms.Result
		model, want = algo.Decide(e.c.alg, model, e.clock.Now(), cost)
		if got := e.allowN(l, "k", cost); got != want {
			e.fatalf("%s at %s: %+v, want %+v", what, e.at(), got, want)
		}
	}
	reset := func() {
		e.t.Helper()
		if err := ls.(store.Store).Reset(ctx, key, e.c.alg); err != nil {
			e.fatalf("Reset: %v", err)
		}
		model = algo.Clone(e.c.alg, mark)
	}
	third := max(e.c.limit/3, 1)
	decide("a request before the lease", 1)
	lease(third, e.c.window)
	decide("a request after the lease", 1)
	decide("a request after the lease", 1)
	reset()
	decide("the first request after a Reset", 1)
	// The rest of the limit, then a lease the key must deny: the mark
	// stays the admitted lease's.
	for i := range e.c.limit {
		decide(fmt.Sprintf("request %d of the rest", i+1), 1)
	}
	if res := lease(e.c.limit, 0); res.Allowed {
		e.fatalf("a lease of the whole limit on a spent key admitted: %+v", res)
	}
	reset()
	decide("a request after a Reset that follows a denied lease", 1)
	// Once the mark's state stops counting, a Reset leaves the key full.
	e.clock.Advance(e.c.fullBack + e.c.window)
	reset()
	if res := e.peek(l, "k"); res.Remaining != e.c.limit {
		e.fatalf("a Reset once the mark stopped counting: Remaining %d, want %d", res.Remaining, e.c.limit)
	}
	decide("a request once the mark stopped counting", 1)
}
