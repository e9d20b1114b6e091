package contract

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// step moves the suite's clock on by a random span of up to a fifth of the
// window, whole microseconds, or not at all.
func (e *env) step(rng *rand.Rand) {
	if rng.IntN(3) > 0 {
		e.clock.Advance(time.Duration(rng.Int64N(int64(e.c.window / 5))).Truncate(time.Microsecond))
	}
}

// refundAtOnce: two keys see the same decisions, and one of them also
// requests that are refunded at once; every decision gets the same Result
// on both.
func refundAtOnce(e *env) {
	ctx := context.Background()
	with, without := e.limiter(e.c.alg), e.limiter(e.c.alg)
	rng := rand.New(rand.NewPCG(7, uint64(len(e.c.name))))
	refunds := 0
	for i := range 200 {
		e.step(rng)
		if rng.IntN(3) == 0 {
			n := 1 + rng.Int64N(min(e.c.limit, 3))
			res := e.allowN(with, "k", n)
			if res.Allowed {
				after, err := with.Refund(ctx, "k", res, n)
				if err != nil {
					e.fatalf("Refund(%d) at %s: %v", n, e.at(), err)
				}
				e.keptFor(with, after)
				refunds++
			}
			continue
		}
		n := 1 + rng.Int64N(e.c.limit)
		got, want := e.allowN(with, "k", n), e.allowN(without, "k", n)
		if got != want {
			e.fatalf(
				"decision %d, AllowN(%d) at %s: %+v on the key whose requests were refunded at once, %+v on the key that "+
					"never had them",
				i,
				n,
				e.at(),
				got,
				want,
			)
		}
	}
	if refunds < 10 {
		e.fatalf("only %d refunds ran", refunds)
	}
}

// keptFor checks that the store keeps l's key "k" no longer than res, the
// Result of a refund, says its state counts, or until its At if that is
// later (for a fixed window, until the window of At ends: its state pins
// its window, even when it counts nothing), plus the store's grace: a
// refund that shortens a key's life shortens its TTL.
func (e *env) keptFor(l lim, res ratewise.Result) {
	e.t.Helper()
	reporter, ok := e.store.(ttlReporter)
	if !ok {
		return
	}
	ttl, err := reporter.TTL(context.Background(), store.Key{Name: l.prefix + "k"}, e.c.alg, e.clock.Now())
	if err != nil {
		e.fatalf("TTL: %v", err)
	}
	life := max(res.ResetAfter, res.At.Sub(e.clock.Now()))
	if algo.FamilyOf(e.c.kind) == algo.FamilyFixedWindow {
		w := algo.ScopeOf(e.c.alg).Window
		life = max(life, res.At.Truncate(w).Add(w).Sub(e.clock.Now()))
	}
	// Stores with millisecond expiry may round up to the next ms, and
	// add one, for a millisecond clock that lags their own reading (see
	// the Redis store's keys).
	if ceil := life.Truncate(time.Millisecond) + 2*time.Millisecond + e.cfg.grace; ttl > ceil {
		e.fatalf(
			"after a refund the store keeps the state for %v, want at most %v for ResetAfter %v and At %v after now",
			ttl,
			ceil,
			res.ResetAfter,
			res.At.Sub(e.clock.Now()),
		)
	}
}

// refundNeverMore: random admissions and refunds of earlier admissions, in
// full or in part, at once or later; what was admitted and not refunded is
// a history the algorithm admits on its own, replayed in time order on an
// empty key.
func refundNeverMore(e *env) {
	ctx := context.Background()
	l := e.limiter(e.c.alg)
	rng := rand.New(rand.NewPCG(8, uint64(len(e.c.name))))
	type charge struct {
		res      ratewise.Result
		cost     int64
		refunded bool
	}
	var kept []charge
	for range 200 {
		e.step(rng)
		if len(kept) > 0 && rng.IntN(5) < 2 {
			// A recent admission, or any.
			c := &kept[max(0, len(kept)-1-rng.IntN(min(len(kept), 6)))]
			if rng.IntN(2) == 0 {
				c = &kept[rng.IntN(len(kept))]
			}
			if c.refunded {
				continue
			}
			n := 1 + rng.Int64N(c.cost)
			if _, err := l.Refund(ctx, "k", c.res, n); err != nil {
				e.fatalf("Refund(%d) at %s: %v", n, e.at(), err)
			}
			c.cost -= n
			c.refunded = true
			continue
		}
		n := 1 + rng.Int64N(min(e.c.limit, 3))
		if res := e.allowN(l, "k", n); res.Allowed {
			kept = append(kept, charge{res: res, cost: n})
		}
	}
	slices.SortStableFunc(kept, func(a, b charge) int { return a.res.At.Compare(b.res.At) })
	var replay algo.State
	for i, c := range kept {
		if c.cost == 0 {
			continue
		}
		var res algorithms.Result
		if replay, res = algo.Decide(e.c.alg, replay, c.res.At, c.cost); !res.Allowed {
			e.fatalf(
				"request %d (cost %d at %s) was admitted and not refunded, but the history of what was admitted and not "+
					"refunded has no room for it: a refund gave back more than it took",
				i,
				c.cost,
				c.res.At.Sub(e.c.start),
			)
		}
	}
}

// refundInvalid: a Result that was not an admission, a cost outside
// [1, the admission's cost] (and for a store, [1, limit]) and a time
// outside the range are errors, and change nothing.
func refundInvalid(e *env) {
	rf := e.store
	ctx := context.Background()
	l := e.limiter(e.c.alg)
	res := e.allowN(l, "k", 1)
	if _, err := l.Refund(ctx, "k", ratewise.Result{At: res.At}, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
		e.fatalf("Refund of a denial: %v, want ErrNotAdmitted", err)
	}
	if _, err := l.Refund(ctx, "k", res, 0); !errors.Is(err, algorithms.ErrInvalidCost) {
		e.fatalf("Refund(0): %v, want ErrInvalidCost", err)
	}
	if _, err := l.Refund(ctx, "k", res, 2); !errors.Is(err, algorithms.ErrInvalidCost) {
		e.fatalf("Refund(2) of an admission of 1: %v, want ErrInvalidCost", err)
	}
	k := store.Key{Name: l.prefix + "k"}
	if _, err := rf.Refund(ctx, k, e.c.alg, e.clock.Now(), res.At, algo.MaxCost(e.c.alg)+1); !errors.Is(
		err,
		algorithms.ErrCostExceedsLimit,
	) {
		e.fatalf("a store refund of limit+1: %v, want ErrCostExceedsLimit", err)
	}
	if _, err := rf.Refund(ctx, store.Key{Name: l.prefix + "k"}, e.c.alg, e.clock.Now(), time.Unix(-1, 0), 1); !errors.Is(
		err,
		algorithms.ErrInvalidTime,
	) {
		e.fatalf("a refund of a charge before 1970: %v, want ErrInvalidTime", err)
	}
	if got := e.peek(l, "k"); got.Remaining != e.c.limit-1 {
		e.fatalf("after refused refunds Remaining is %d, want %d", got.Remaining, e.c.limit-1)
	}
}

// refundConcurrency: 64 goroutines on one key each take a unit and give it
// back at once; the key ends full, and no refund is lost or doubled.
func refundConcurrency(e *env) {
	ctx := context.Background()
	l := e.limiter(e.c.alg)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				res, err := l.Allow(ctx, "k")
				if err == nil && res.Allowed {
					_, err = l.Refund(ctx, "k", res, 1)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.fatalf("a decision or refund failed: %v", err)
	}
	if res := e.peek(l, "k"); res.Remaining != e.c.limit {
		e.fatalf("after every admission was refunded at once, Remaining is %d, want %d", res.Remaining, e.c.limit)
	}
}

// peekN: PeekN(n) answers what AllowN(n) would answer on the same state,
// and changes nothing. It checks the costs around what is left.
func peekN(e *env) {
	ctx := context.Background()
	for used := range e.c.limit + 1 {
		l := e.limiter(e.c.alg)
		if used > 0 {
			e.allowN(l, "k", used)
		}
		e.clock.Advance(e.c.window / 7)
		before := e.peek(l, "k")
		for _, n := range []int64{1, before.Remaining, before.Remaining + 1, e.c.limit} {
			if n < 1 || n > e.c.limit {
				continue
			}
			got, err := l.PeekN(ctx, "k", n)
			if err != nil {
				e.fatalf("PeekN(%d): %v", n, err)
			}
			twin := e.limiter(e.c.alg)
			e.clock.Advance(-e.c.window / 7)
			if used > 0 {
				e.allowN(twin, "k", used)
			}
			e.clock.Advance(e.c.window / 7)
			want := e.allowN(twin, "k", n)
			if got.Allowed != want.Allowed || got.RetryAfter != want.RetryAfter || got.Remaining != before.Remaining {
				e.fatalf("with %d used, PeekN(%d) = %+v, but AllowN(%d) on the same state = %+v", used, n, got, n, want)
			}
		}
		if after := e.peek(l, "k"); after != before {
			e.fatalf("PeekN changed the key: Peek %+v before, %+v after", before, after)
		}
		if _, err := l.PeekN(ctx, "k", e.c.limit+1); !errors.Is(err, algorithms.ErrCostExceedsLimit) {
			e.fatalf("PeekN(limit+1): %v, want ErrCostExceedsLimit", err)
		}
	}
}

// refundBound: a refund goes into the state its admission charged, named
// by its Result (Result.Charged), whatever the key's limit is by then; a
// Peek's Result, a denial and more than the admission's cost are refused;
// a Stack's admission comes back to each of its limits.
func refundBound(e *env) {
	ctx := context.Background()
	// A key moved from the case's window to one twice as long, a tier of
	// another scope, after one request: the refund goes back into the
	// first window's state, never into the new one, which stays spent.
	longer := e.c.build(e.c.limit, 2*e.c.window)
	tier := map[string]algorithms.Algorithm{}
	l := e.limiterOn(
		e.c.alg,
		e.clock,
		ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
			return tier[key], nil
		}),
	)
	charged := e.allow(l, "k")
	if alg, cost := charged.Charged(); alg != e.c.alg || cost != 1 {
		e.fatalf("an admission says it charged %v, %d; want %v, 1", alg, cost, e.c.alg)
	}
	tier["k"] = longer
	e.exhaust(l, "k")
	after, err := l.Refund(ctx, "k", charged, 1)
	if err != nil || after.Remaining != e.c.limit || after.Limit != e.c.limit {
		e.fatalf(
			"a refund after the key moved to a tier of another window: %+v, %v; want the charged window's state whole again",
			after,
			err,
		)
	}
	if res := e.allow(l, "k"); res.Allowed {
		e.fatalf("the new tier after a refund of a charge it never had: %+v, want it still spent", res)
	}
	delete(tier, "k")
	if res := e.peek(l, "k"); res.Remaining != e.c.limit {
		e.fatalf("the charged window after its refund: %+v, want Remaining %d", res, e.c.limit)
	}

	// What charged nothing gives nothing back.
	m := e.limiter(e.c.alg)
	used := e.allowN(m, "k", e.c.limit-1)
	if peeked := e.peek(m, "k"); true {
		if _, err := m.Refund(ctx, "k", peeked, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
			e.fatalf("a refund of a Peek's Result: %v, want ErrNotAdmitted", err)
		}
	}
	if denied := e.allowN(m, "k", 2); denied.Allowed {
		e.fatalf("a request of 2 with 1 left: %+v", denied)
	} else if _, err := m.Refund(ctx, "k", denied, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
		e.fatalf("a refund of a denial: %v, want ErrNotAdmitted", err)
	}
	if _, err := m.Refund(ctx, "k", used, e.c.limit); !errors.Is(err, algorithms.ErrInvalidCost) {
		e.fatalf("a refund of %d of an admission of %d: %v, want ErrInvalidCost", e.c.limit, e.c.limit-1, err)
	}
	if res := e.peek(m, "k"); res.Remaining != 1 {
		e.fatalf("after the refused refunds: %+v, want Remaining 1", res)
	}

	// A set's admission comes back to every limit.
	{
		s, lims := e.set(e.c.alg, e.partner(e.c.limit))
		admitted, err := s.AllowN(ctx, "k", 2)
		if err != nil || !admitted.Allowed {
			e.fatalf("a set's AllowN(2): %+v, %v", admitted, err)
		}
		if _, err := s.Refund(ctx, "k", admitted, 2); err != nil {
			e.fatalf("a set's Refund(2): %v", err)
		}
		for i, l := range lims {
			if res := e.peek(l, "k"); res.Remaining != algo.MaxCost(l.Algorithm()) {
				e.fatalf("limit %d of a set after its admission was refunded: %+v, want it whole", i, res)
			}
		}
	}

	// A bucket converted to another rate since the charge gives nothing
	// back: what the charge took is not what the key counts now.
	if algo.FamilyOf(e.c.kind) == algo.FamilyBucket {
		b := e.limiter(e.c.alg)
		charge := e.allowN(b, "k", 3)
		other := e.limiterIn(e.c.build(2*e.c.limit, e.c.window), e.clock, b.namespace)
		before := e.peek(other, "k") // converts the key to the doubled rate
		if _, err := b.Refund(ctx, "k", charge, 3); err != nil {
			e.fatalf("a refund after the rate changed: %v", err)
		}
		if after := e.peek(other, "k"); after != before {
			e.fatalf("a refund of a charge made at another rate count changed the converted key: %+v, was %+v", after, before)
		}

		// Nor does one changed to a faster rate and back since: it drained
		// faster in between than the charge's rate says, and what it holds
		// now is a later admission's. The store keeps the key, full or not,
		// for as long as a refund of the earlier charge could still give
		// anything back: a capacity's refill time.
		b = e.limiter(e.c.alg)
		charge = e.allowN(b, "k", 3)
		fast := e.limiterIn(e.c.build(100*e.c.limit, e.c.window), e.clock, b.namespace)
		e.peek(fast, "k") // converts the key to the faster rate
		// Drained at the faster rate, well before the charge's rate says.
		e.clock.Advance((4*e.c.window/time.Duration(100*e.c.limit) + time.Microsecond - 1).Truncate(time.Microsecond))
		e.allow(b, "k") // back at the charge's rate: a later admission
		if reporter, ok := e.store.(ttlReporter); ok {
			ttl, err := reporter.TTL(ctx, store.Key{Name: b.prefix + "k"}, e.c.alg, e.clock.Now())
			if want := algo.QuotaOf(e.c.alg).Window.Truncate(time.Millisecond); err != nil || ttl < want {
				e.fatalf(
					"a bucket whose rate changed and changed back is kept for %v (%v), want at least a capacity's refill time, %v",
					ttl,
					err,
					want,
				)
			}
		}
		before = e.peek(b, "k")
		if _, err := b.Refund(ctx, "k", charge, 3); err != nil {
			e.fatalf("a refund after the rate changed and changed back: %v", err)
		}
		if after := e.peek(b, "k"); after != before {
			e.fatalf(
				"a refund of a charge made before the rate changed and changed back gave back a later admission: %+v, was %+v",
				after,
				before,
			)
		}
	}
}
