package contract

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

var rules = []rule{
	{
		"calendar_months",
		"a calendar month quota admits Limit from the 1st's first instant and denies until the next 1st, to " +
			"the microsecond, in months of 28 to 31 days, in leap years and not (2100), in UTC and in a time zone",
		calendarMonths,
		false,
	},
	{
		"calendar_clock_changes",
		"a calendar day, week or month that holds a clock change is as much shorter or longer (a 23- or 25-hour " +
			"day, half an hour on Lord Howe Island, a day that starts at 01:00 where midnight is skipped), and a " +
			"denial's RetryAfter lands on the next period's first instant",
		calendarClockChanges,
		false,
	},
	{
		"calendar_tiers",
		"a calendar quota moved to another limit keeps what the current period used, a lowered one denies until " +
			"the next period's first instant, and the next period starts afresh under the limit the key then has",
		calendarTiers,
		false,
	},
	{
		"calendar_store_clock",
		"on the clock the store decides by, its own included, a calendar quota's admissions reset and its denial " +
			"retries at the next period's first instant after the decision's time (At), to the microsecond",
		calendarStoreClock,
		true,
	},
	{
		"exact_admission",
		"at one instant a fresh key admits exactly Limit requests, counting Remaining down to 0, and the " +
			"algorithm's refill admits exactly what its semantics predict",
		exactAdmission,
		false,
	},
	{
		"matches_model",
		"every decision on traffic that staggers requests over many windows, with parameters whose intervals are " +
			"not whole microseconds and a limit that changes while the key holds state, admits and reports " +
			"Remaining exactly as the algorithm's documented semantics say",
		matchesModel,
		false,
	},
	{
		"boundary_burst",
		"100 requests at 13:59:59 and 100 at 14:00:00 with a limit of 100 per minute admit what the algorithm " +
			"documents: 200 for the fixed window, 100 for the sliding log",
		boundaryBurst,
		false,
	},
	{
		"window_bound",
		"no span of length Window ever holds more admitted cost than the algorithm's documented bound (Limit for " +
			"the sliding log)",
		windowBound,
		false,
	},
	{
		"denied_again",
		"a key that denied a request, asked again at the same instant and at steps up to the RetryAfter, by " +
			"requests of cost 1 and 2 and by peeks, decides each exactly as the algorithm does (every Result " +
			"field), admits nothing before the boundary and admits at it: a store that remembers denials " +
			"never admits what it would deny nor denies what it would admit",
		deniedAgain,
		false,
	},
	{
		"boundaries",
		"a request is denied 1µs before the refill or expiry boundary and admitted exactly at it, and RetryAfter " +
			"is that boundary",
		boundaries,
		false,
	},
	{
		"cost_n",
		"a request of cost n consumes n, is denied whole when fewer than n are available, and waits for n",
		costN,
		false,
	},
	{"peek_consumes_nothing", "Peek reports the state and consumes nothing", peekConsumesNothing, false},
	{
		"peek_n",
		"PeekN(n) reports what AllowN(n) would get on the same state (Allowed, RetryAfter) and consumes nothing",
		peekN,
		false,
	},
	{
		"refund_at_once",
		"an admission refunded before anything else happens on the key leaves it exactly as if the request had " +
			"never been made",
		refundAtOnce,
		false,
	},
	{
		"refund_never_more",
		"after any refunds, what was admitted and not refunded is a history the algorithm admits on its own: a " +
			"refund never lets more through than if the refunded units had never been charged",
		refundNeverMore,
		false,
	},
	{
		"refund_invalid",
		"refunding a denial, a cost outside [1, the admission's cost] (a store: [1, limit]) or a time outside the " +
			"range is an error and changes nothing",
		refundInvalid,
		false,
	},
	{
		"refund_bound",
		"a refund goes into the state its admission charged (Result.Charged), whatever the key's limit or tier is " +
			"by then; a Peek's Result, a denial or more than the admission's cost is refused; a Stack's " +
			"admission comes back to every limit; a bucket converted to another rate since, or changed and " +
			"changed back, gives nothing back",
		refundBound,
		false,
	},
	{
		"refund_concurrency",
		"64 goroutines that each take a unit and give it back at once leave the key full",
		refundConcurrency,
		false,
	},
	{
		"reset",
		"Reset forgets a key, which is then at full capacity; resetting an unknown key is not an error",
		reset,
		true,
	},
	{"key_isolation", "keys, prefixes and algorithms never share state", keyIsolation, true},
	{
		"long_keys",
		"keys of 1 byte to 64 KiB, of any bytes, decide exactly as the reference store decides them, with and " +
			"without a request ID of 128 bytes, through refunds, sets, bookings and leases: no two keys " +
			"share a state, a once record or a mark, however long, however alike, and whatever a store makes " +
			"of a long one",
		longKeys,
		true,
	},
	{
		"once_spelling",
		"a request ID applied to one key is never taken for another (key, ID), whatever the key and the ID hold: " +
			"an admission, a Stack's admission, a refund or a reset with ID p+s+z on key x, then one with ID " +
			"z on key x+s'+p, with s and s' the separators stores put between parts, each decide as the " +
			"reference store decides them",
		onceSpelling,
		true,
	},
	{
		"key_parts",
		"a store keeps one state per store.Key's String: a namespace and a name are the key namespace:name, " +
			"however a key is split, for Decide, Reset and Refund alike",
		keyParts,
		true,
	},
	{
		"scope_isolation",
		"limiters of one algorithm whose windows or periods differ never share a key's state; limiters that differ " +
			"only in their limit do",
		scopeIsolation,
		true,
	},
	{
		"result_fields",
		"Limit is the limit, 0 <= Remaining <= Limit, RetryAfter > 0 exactly when denied and is the shortest wait, " +
			"ResetAfter > 0 after an admission, At is not before now",
		resultFields,
		false,
	},
	{
		"state_expiry",
		"after ResetAfter the key is back at full capacity and the store keeps its state no longer than ResetAfter " +
			"(plus the grace it documents)",
		stateExpiry,
		false,
	},
	{"concurrency", "64 goroutines on one key admit exactly the limit", concurrency, true},
	{
		"hot_key_real_clock",
		"64 goroutines on one key with the system clock, whose readings reach the store out of order, never admit " +
			"beyond the algorithm's bound, judged at the times the decisions were made at (Result.At)",
		hotKeyRealClock,
		true,
	},
	{
		"clock_steps_back",
		"a clock that steps back lets nothing extra through and waits are measured from its now",
		clockStepsBack,
		false,
	},
	{
		"stale_time",
		"a request whose now is behind the latest time the key has seen (by up to 50ms, or by whole windows) is " +
			"decided exactly as with the clock held at that latest time: the same admission and Remaining, " +
			"RetryAfter and ResetAfter longer by the gap, and an admission made at the held time",
		staleTime,
		false,
	},
	{
		"per_key_limits",
		"one limiter applies each key's own limit (WithTiers) or a call's (AllowWith): a key admits exactly its " +
			"limit, a key moved to a limit of the same scope keeps what it used, and an error choosing the " +
			"limit consumes nothing",
		perKeyLimits,
		false,
	},
	{
		"set_all_or_nothing",
		"a set of limits admits a request only if every limit does, then charges each; a denial charges none, " +
			"names the binding limit and a RetryAfter after which the request is admitted",
		setAllOrNothing,
		false,
	},
	{
		"set_concurrency",
		"64 goroutines through a set on one key admit exactly the smallest limit and charge no limit for a denied request",
		setConcurrency,
		false,
	},
	{"set_invalid", "a set with two limits of one kind and scope is refused with ErrInvalidAlgorithm", setInvalid, true},
	{
		"two_clocks",
		"two limiters with clocks minutes apart on one store: the one ahead, deciding beside a key the other spent " +
			"(the same key under other windows) with readings past that key's lifetime, never drops its " +
			"state, and the key decides as if alone",
		twoClocks,
		false,
	},
	{
		"stale_after_expiry",
		"a request whose clock reading is behind an inspection that found the key's state expired is still decided " +
			"with that state",
		staleAfterExpiry,
		false,
	},
	{
		"reservations",
		"booking ahead (store.Store.Reserve) decides exactly as the algorithm's Reserve: the burst at once, then " +
			"one interval more per booking up to the longest wait, nothing charged past it and RetryAfter " +
			"the wait until its turn, later requests behind the bookings; other algorithms are refused",
		reservations,
		false,
	},
	{
		"leases",
		"a store books a lease as the algorithm's Reserve (buckets) or Decide (fixed window) and refuses the logs " +
			"and the calendar window; " +
			"a Reset puts back the state the latest admitted lease left, in which its units stay charged, " +
			"and forgets the rest; a denied lease changes nothing; once that state stops counting, a Reset " +
			"leaves the key full",
		leases,
		false,
	},
	{
		"limit_change",
		"lowering and raising the limit, burst or capacity of a live key keeps what it used, and every result " +
			"stays in range, never an error",
		limitChange,
		true,
	},
	{
		"quota_change",
		"a key that used u of a limit, burst or capacity lowered to L has Remaining max(0, L-u) and waits exactly " +
			"until its own expiry or refill frees room under L; raised, it keeps u",
		quotaChange,
		false,
	},
	{
		"rate_change",
		"a token bucket's or GCRA's rate changed on a live key keeps the tokens it used, converted at the first " +
			"decision under the new rate (a peek and a denial included), which then refills them: lowering " +
			"never hands quota back",
		rateChange,
		false,
	},
	{
		"real_quotas",
		"100,000 per day, 1,000,000 per day, 10,000 per 30 days, 10^9 per second, 7 per 1.5s and 999,999 per 30 " +
			"days, each with its whole count as the limit or burst, decide exactly as the algorithm's " +
			"semantics say, the whole limit in one request included",
		realQuotas,
		false,
	},
	{
		"capabilities",
		"what a store declares (store.Capabilities) is what it does, and never changes: it says it decides on its " +
			"own clock exactly when it ignores the now it is given",
		capabilities,
		true,
	},
	{
		"zero_now",
		"the zero now asks for the current time: a decision, a booking, a refund and a set at it decide at the " +
			"system clock's time on a store on the caller's time, at the store's own on the others",
		zeroNow,
		true,
	},
	{
		"invalid_input",
		"an invalid algorithm (one that fails Validate, or a type that only embeds a registered one), cost or time " +
			"is the error algo.CheckDecision returns, never a panic or a decision",
		invalidInput,
		true,
	},
	{
		"request_id_once",
		"a request retried with its request ID (WithRequestID), through Allow, a Stack, a booking, a Refund or a " +
			"Reset, returns its first outcome and charges (or resets) nothing more, also from 16 goroutines " +
			"at once; another ID is another request; a denial is decided afresh when retried; a peek ignores " +
			"the ID; an empty or over-long ID is ErrInvalidRequestID and charges nothing",
		requestIDOnce,
		false,
	},
	{
		"poisoned_batch",
		"decisions that share a round trip with decisions that fail (on a key the store was made to fail: a " +
			"foreign value, a row held elsewhere) decide as alone: every decision on the poisoned key fails, " +
			"every other is admitted and charged exactly once",
		poisonedBatch,
		true,
	},
	{"context_cancelled", "a cancelled context yields its error and consumes nothing", contextCancelled, true},
	{
		"model_check",
		"random sequences mixing admissions, peeks, refunds of any age and amount, bookings and cancellations, " +
			"resets, changes of limit, burst, rate, window and kind, sets, clock readings behind and ahead, " +
			"idle gaps, requests retried with their ID and writes whose reply is lost, with runs of steps " +
			"made at once so that a store that shares round trips decides them in batches, decide exactly as " +
			"the reference store in some order of each run, every Result in range; a retried write changes " +
			"nothing; no window of any limit in force admits more than that limit, and what was admitted and " +
			"not refunded replays on an empty key",
		modelCheck,
		true,
	},
}

func exactAdmission(e *env) {
	l := e.limiter(e.c.alg)
	for i := range e.c.limit {
		res := e.allow(l, "k")
		if !res.Allowed {
			e.fatalf("request %d of %d denied: %+v", i+1, e.c.limit, res)
		}
		if got, want := res.Remaining, e.c.limit-i-1; got != want {
			e.fatalf("after request %d: Remaining %d, want %d", i+1, got, want)
		}
	}
	if res := e.allow(l, "k"); res.Allowed {
		e.fatalf("request %d admitted with limit %d: %+v", e.c.limit+1, e.c.limit, res)
	}
	e.exhaust(l, "full")

	e.clock.Advance(e.c.firstBack)
	if got, want := e.count(l, "k"), e.c.backAtFirst; got != want {
		e.fatalf("%v after exhaustion: %d admitted, want %d", e.c.firstBack, got, want)
	}
	e.clock.Set(e.c.start.Add(e.c.fullBack - time.Microsecond))
	if res := e.peek(l, "full"); res.Remaining >= e.c.limit {
		e.fatalf(
			"%v after exhaustion, 1µs before full capacity: Remaining %d, want < %d",
			e.c.fullBack-time.Microsecond,
			res.Remaining,
			e.c.limit,
		)
	}
	e.clock.Set(e.c.start.Add(e.c.fullBack))
	if got, want := e.count(l, "full"), e.c.limit; got != want {
		e.fatalf("%v after exhaustion: %d admitted, want %d", e.c.fullBack, got, want)
	}
}

func matchesModel(e *env) {
	// 7 per 12s: a token every 1.714285...s; 2.4s sub-windows.
	const limit, window = 7, 12 * time.Second
	alg := e.c.build(limit, window)
	l := e.limiter(alg)
	m := e.c.model(window)
	check := func(step int, cost int64) {
		e.t.Helper()
		e.decideAsModel(l, m, fmt.Sprintf("step %d", step), cost)
	}
	// Bursts of cost 1 exactly one window apart: every algorithm is full
	// again each time, unless rounding of a fractional interval piles up.
	e.clock.Set(e.c.start.Truncate(window).Add(window))
	for burst := range 20 {
		for i := range limit {
			check(burst*limit+i, 1)
		}
		e.clock.Advance(window)
	}
	rng := rand.New(rand.NewPCG(9, 10))
	steps := 3000
	if e.cfg.sampled {
		steps = 1000
	}
	for step := range steps {
		// Mostly short gaps, sometimes several windows.
		gap := time.Duration(rng.Int64N(int64(window / 4)))
		if rng.IntN(20) == 0 {
			gap = time.Duration(rng.Int64N(int64(3 * window)))
		}
		e.clock.Advance(gap.Truncate(time.Microsecond))
		// Now and then the limit changes while the key holds state: the
		// same limiter's key, under another limit in the same scope.
		if rng.IntN(100) == 0 {
			l = e.limiterIn(e.c.build(1+rng.Int64N(2*limit), window), e.clock, l.namespace)
		}
		check(step, rng.Int64N(algo.MaxCost(l.Algorithm())+1))
	}
}

func boundaryBurst(e *env) {
	l := e.limiter(e.c.build(100, time.Minute))
	var admitted int64
	for _, at := range []time.Time{
		time.Date(2026, 6, 1, 13, 59, 59, 0, time.UTC),
		time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC),
	} {
		e.clock.Set(at)
		for range 100 {
			if e.allow(l, "k").Allowed {
				admitted++
			}
		}
	}
	if got, want := admitted, e.c.boundaryAdmits; got != want {
		e.fatalf("%d admitted within one second, want %d", got, want)
	}
}

func windowBound(e *env) {
	l := e.limiter(e.c.alg)
	rng := rand.New(rand.NewPCG(1, 2))
	var admitted []event
	// About three requests every 2s on average, in bursts, for 5 windows:
	// well above the limit, so the bound is exercised.
	// Steps scale with the window: a calendar day's case takes as many as
	// a minute's.
	step := 4 * time.Second * (e.c.window / caseWindow)
	for e.clock.Now().Sub(e.c.start) < 5*e.c.window {
		e.clock.Advance(time.Duration(rng.Int64N(int64(step))))
		for range rng.IntN(6) {
			cost := 1 + rng.Int64N(3)
			if e.allowN(l, "k", cost).Allowed {
				admitted = append(admitted, event{at: e.clock.Now(), cost: cost})
			}
		}
	}
	got, bound := maxInWindow(admitted, e.c.window), e.c.windowBound(admitted, e.c.limit, e.c.window)
	if got > bound {
		e.fatalf("a span of %v holds %d admitted, bound %d", e.c.window, got, bound)
	}
	if got < e.c.limit {
		e.fatalf(
			"the busiest span of %v holds only %d admitted, so the traffic never reached the limit %d",
			e.c.window,
			got,
			e.c.limit,
		)
	}
}

func boundaries(e *env) {
	l := e.limiter(e.c.alg)
	e.exhaust(l, "k")
	res := e.allow(l, "k")
	if res.Allowed || res.RetryAfter != e.c.firstBack {
		e.fatalf("denied request: got %+v, want denied with RetryAfter %v", res, e.c.firstBack)
	}
	e.clock.Advance(e.c.firstBack - time.Microsecond)
	if res := e.allow(l, "k"); res.Allowed {
		e.fatalf("admitted 1µs before the boundary %v: %+v", e.c.firstBack, res)
	}
	e.clock.Advance(time.Microsecond)
	if res := e.allow(l, "k"); !res.Allowed {
		e.fatalf("denied exactly at the boundary %v: %+v", e.c.firstBack, res)
	}
}

func costN(e *env) {
	l := e.limiter(e.c.alg)
	if res := e.allowN(l, "k", 3); !res.Allowed || res.Remaining != e.c.limit-3 {
		e.fatalf("AllowN(3) on a fresh key: got %+v, want admitted with Remaining %d", res, e.c.limit-3)
	}
	left := e.c.limit - 3
	if res := e.allowN(l, "k", left+1); res.Allowed || res.Remaining != left {
		e.fatalf("AllowN(%d) with %d left: got %+v, want denied with Remaining unchanged", left+1, left, res)
	}
	if res := e.allowN(l, "k", left); !res.Allowed || res.Remaining != 0 {
		e.fatalf("AllowN(%d) with %d left: got %+v, want admitted with Remaining 0", left, left, res)
	}
	// A cost of n waits for n to come back, not just 1.
	const n = 3
	res := e.allowN(l, "k", n)
	if want := e.c.costBack(n); res.Allowed || res.RetryAfter != want {
		e.fatalf("AllowN(%d) when exhausted: got %+v, want denied with RetryAfter %v", n, res, want)
	}
	e.clock.Advance(res.RetryAfter - time.Microsecond)
	if res := e.allowN(l, "k", n); res.Allowed {
		e.fatalf("AllowN(%d) admitted 1µs before its RetryAfter: %+v", n, res)
	}
	e.clock.Advance(time.Microsecond)
	if res := e.allowN(l, "k", n); !res.Allowed {
		e.fatalf("AllowN(%d) denied after its RetryAfter: %+v", n, res)
	}
}

func peekConsumesNothing(e *env) {
	l := e.limiter(e.c.alg)
	if res := e.peek(l, "k"); !res.Allowed || res.Remaining != e.c.limit || res.RetryAfter != 0 || res.ResetAfter != 0 {
		e.fatalf("Peek on a fresh key: got %+v, want allowed, Remaining %d, no waits", res, e.c.limit)
	}
	e.allowN(l, "k", 3)
	for range 5 {
		if res := e.peek(l, "k"); !res.Allowed || res.Remaining != e.c.limit-3 {
			e.fatalf("Peek after 3 admitted: got %+v, want allowed with Remaining %d", res, e.c.limit-3)
		}
	}
	if res := e.allow(l, "k"); res.Remaining != e.c.limit-4 {
		e.fatalf("Allow after peeks: Remaining %d, want %d", res.Remaining, e.c.limit-4)
	}
	l2 := e.limiter(e.c.alg)
	e.exhaust(l2, "k")
	res := e.peek(l2, "k")
	if res.Allowed || res.Remaining != 0 || res.RetryAfter != e.c.firstBack {
		e.fatalf("Peek when exhausted: got %+v, want denied, Remaining 0, RetryAfter %v", res, e.c.firstBack)
	}
	e.clock.Advance(e.c.firstBack)
	if res := e.allow(l2, "k"); !res.Allowed {
		e.fatalf("denied at the boundary after peeking: %+v", res)
	}
}

func deniedAgain(e *env) {
	l := e.limiter(e.c.alg)
	alg := l.Algorithm()
	var state algo.State
	decide := func(cost int64) ratewise.Result {
		e.t.Helper()
		var got ratewise.Result
		if cost == 0 {
			got = e.peek(l, "k")
		} else {
			got = e.allowN(l, "k", cost)
		}
		var want ratewise.Result
		state, want = algo.Decide(alg, state, e.clock.Now(), cost)
		if got != want {
			e.fatalf("cost %d at %s: got %+v, the algorithm gives %+v", cost, e.at(), got, want)
		}
		return got
	}
	denied := decide(1)
	for n := int64(0); denied.Allowed; n++ {
		if n > 2*e.c.limit {
			e.fatalf("%d requests at one instant were all admitted", n)
		}
		denied = decide(1)
	}
	start, boundary := e.clock.Now(), e.clock.Now().Add(denied.RetryAfter)
	for step := range 9 {
		e.clock.Set(start.Add((denied.RetryAfter * time.Duration(step) / 9).Truncate(time.Microsecond)))
		for _, cost := range []int64{1, 1, min(2, algo.MaxCost(alg)), 0, 1} {
			if res := decide(cost); res.Allowed {
				e.fatalf("cost %d admitted at %s, before the first denial's RetryAfter %v", cost, e.at(), denied.RetryAfter)
			}
		}
	}
	e.clock.Set(boundary.Add(-time.Microsecond))
	if res := decide(1); res.Allowed {
		e.fatalf("admitted 1µs before the RetryAfter of the first denial: %+v", res)
	}
	e.clock.Set(boundary)
	if res := decide(1); !res.Allowed {
		e.fatalf("denied at the RetryAfter of the first denial: %+v", res)
	}
}

// decideAsModel sends a request of cost (0: a peek) to l's key "k" and fails
// unless its admission and Remaining are what m decides; what names the
// request in the message.
func (e *env) decideAsModel(l lim, m model, what string, cost int64) ratewise.Result {
	e.t.Helper()
	var res ratewise.Result
	if cost == 0 {
		res = e.peek(l, "k")
	} else {
		res = e.allowN(l, "k", cost)
	}
	allowed, remaining := m.decide(l.Algorithm(), e.clock.Now(), cost)
	if res.Allowed != allowed || res.Remaining != remaining {
		e.fatalf("%s at %s with %#v, cost %d: got Allowed %v Remaining %d, the model says %v and %d",
			what, e.at(), l.Algorithm(), cost, res.Allowed, res.Remaining, allowed, remaining)
	}
	return res
}

// perKeyLimits runs a free tier (the case's limit L) and a paid tier (3L,
// the same algorithm and scope) on one limiter.
func perKeyLimits(e *env) {
	ctx := context.Background()
	free := e.c.alg
	paid := algo.WithQuotaLimit(free, 3*e.c.limit)
	errLookup := errors.New("plan lookup failed")
	plans := map[string]algorithms.Algorithm{"paid": paid, "downgraded": paid}
	l := e.limiterOn(free, e.clock, ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
		if key == "broken" {
			return nil, errLookup
		}
		return plans[key], nil // nil: the limiter's own, the free tier
	}))
	admitted := func(key string) int64 {
		e.t.Helper()
		var n int64
		for ; n <= 4*e.c.limit; n++ {
			if !e.allow(l, key).Allowed {
				return n
			}
		}
		return n
	}
	if got := admitted("free"); got != e.c.limit {
		e.fatalf("a free key admitted %d at one instant, want %d", got, e.c.limit)
	}
	if got := admitted("paid"); got != 3*e.c.limit {
		e.fatalf("a paid key admitted %d at one instant, want %d", got, 3*e.c.limit)
	}
	if res := e.peek(l, "paid"); res.Limit != 3*e.c.limit {
		e.fatalf("a paid key's Limit is %d, want %d", res.Limit, 3*e.c.limit)
	}

	// An upgrade keeps what the key used: L of 3L.
	if got := admitted("upgraded"); got != e.c.limit {
		e.fatalf("a free key admitted %d, want %d", got, e.c.limit)
	}
	plans["upgraded"] = paid
	if res := e.peek(l, "upgraded"); res.Remaining != 2*e.c.limit || res.Limit != 3*e.c.limit {
		e.fatalf("after an upgrade: %+v, want Remaining %d of %d", res, 2*e.c.limit, 3*e.c.limit)
	}
	if got := admitted("upgraded"); got != 2*e.c.limit {
		e.fatalf("after an upgrade the key admitted %d more, want %d", got, 2*e.c.limit)
	}

	// A downgrade below what was used denies, in range.
	for range 2 * e.c.limit {
		e.allow(l, "downgraded")
	}
	delete(plans, "downgraded")
	if res := e.peek(l, "downgraded"); res.Allowed || res.Remaining != 0 || res.Limit != e.c.limit {
		e.fatalf("after a downgrade below its use: %+v, want denied with Remaining 0 of %d", res, e.c.limit)
	}

	// A call's own limit.
	for i := range e.c.limit + 1 {
		if res, err := l.AllowWith(ctx, "call", paid, 1); err != nil || !res.Allowed {
			e.fatalf("AllowWith the paid limit, request %d: %+v, %v", i+1, res, err)
		}
	}
	if res, err := l.AllowWith(ctx, "call", free, 1); err != nil || res.Allowed {
		e.fatalf("AllowWith the free limit after %d: %+v, %v; want denied", e.c.limit+1, res, err)
	}

	// An error choosing the limit is the caller's, wrapped, and decides
	// nothing.
	if _, err := l.Allow(ctx, "broken"); !errors.Is(err, errLookup) {
		e.fatalf("a failing tier function: %v, want its error", err)
	}
	if res, err := l.AllowWith(ctx, "broken", free, 1); err != nil || res.Remaining != e.c.limit-1 {
		e.fatalf("the key of a failing tier function afterwards: %+v, %v; want Remaining %d", res, err, e.c.limit-1)
	}
}
