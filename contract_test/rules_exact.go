package contract

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
)

// Rules for exactness under real conditions: stale clocks, changed limits,
// the quotas APIs sell, and bad input.

func staleTime(e *env) {
	// The minimal reproduction: with 2 per second, requests at 0, 0, 1.5s,
	// 0.9s and 1.9s. With the clock held at its latest reading the fourth
	// is made at 1.5s; a sliding log that let it see only one record would
	// admit all five, three of them within one second.
	const limit = 2
	var admitted int
	compareStale(
		e,
		e.c.build(limit, time.Second),
		[]time.Duration{0, 0, 1500 * time.Millisecond, 900 * time.Millisecond, 1900 * time.Millisecond},
		func(int) int64 { return 1 },
		func(r ratewise.Result) {
			if r.Allowed {
				admitted++
			}
		},
	)
	if algo.FamilyOf(e.c.kind) == algo.FamilyLog && !algo.TakesSubWindows(e.c.kind) && admitted != 4 {
		e.fatalf("the minimal reproduction admitted %d, want 4 (yes yes yes yes no)", admitted)
	}

	// Random traffic: 20 per 10s, a reading every 0-1s, a third of them up
	// to 50ms stale and a sixth one to three windows stale.
	const window = 10 * time.Second
	rng := rand.New(rand.NewPCG(13, 14))
	var offsets []time.Duration
	var clock time.Duration
	for range 400 {
		clock += time.Duration(rng.Int64N(int64(time.Second))).Truncate(time.Microsecond)
		at := clock
		switch rng.IntN(6) {
		case 0, 1:
			at -= time.Duration(rng.Int64N(int64(50 * time.Millisecond))).Truncate(time.Microsecond)
		case 2:
			at -= time.Duration(1+rng.IntN(3)) * window
		}
		offsets = append(offsets, at)
	}
	compareStale(
		e,
		e.c.build(20, window),
		offsets,
		func(int) int64 { return 1 + rng.Int64N(4) },
		func(ratewise.Result) {},
	)
}

// compareStale sends requests at start plus each offset to one key on a clock
// that reads exactly that, and to another key on a clock held at its latest
// reading so far, and requires the decisions to match as the rule says.
func compareStale(
	e *env,
	alg algorithms.Algorithm,
	offsets []time.Duration,
	cost func(int) int64,
	seen func(ratewise.Result),
) {
	e.t.Helper()
	start := e.c.start
	staleClock, heldClock := ratewisetest.NewClock(start), ratewisetest.NewClock(start)
	stale, held := e.limiterOn(alg, staleClock), e.limiterOn(alg, heldClock)
	var latest time.Time
	for i, off := range offsets {
		now := start.Add(off)
		if now.After(latest) {
			latest = now
		}
		staleClock.Set(now)
		heldClock.Set(latest)
		n := cost(i)
		got, err := stale.AllowN(context.Background(), "k", n)
		if err != nil {
			e.fatalf("request %d: %v", i, err)
		}
		want, err := held.AllowN(context.Background(), "k", n)
		if err != nil {
			e.fatalf("request %d with the clock held: %v", i, err)
		}
		seen(got)
		gap := latest.Sub(now)
		if want.RetryAfter > 0 {
			want.RetryAfter += gap
		}
		if want.ResetAfter > 0 {
			want.ResetAfter += gap
		}
		// At is never before now nor after the held clock, and an admission
		// is made exactly at the held clock, but for the fixed window, which
		// reports its window's start. (A denial of cost 1 is not remembered,
		// so a later stale request may be denied at an earlier time, the
		// same way.)
		if got.At.Before(now) || got.At.After(want.At) || got.Allowed && !got.At.Equal(want.At) && !e.c.atIsWindowStart {
			e.fatalf("request %d at start+%v, cost %d: decided at %v, the held clock read %v", i, off, n, got.At, want.At)
		}
		if got.Allowed != want.Allowed || got.Remaining != want.Remaining ||
			got.RetryAfter != want.RetryAfter || got.ResetAfter != want.ResetAfter {
			e.fatalf(
				"request %d at start+%v, %v behind the latest reading, cost %d:\n got              %+v\n with clock held  %+v",
				i,
				off,
				gap,
				n,
				got,
				want,
			)
		}
	}
}

// withLimit returns the case's algorithm with another limit, capacity or
// burst, and every other parameter unchanged.
func (e *env) withLimit(limit int64) algorithms.Algorithm {
	return algo.WithQuotaLimit(e.c.alg, limit)
}

func limitChange(e *env) {
	at := e.withLimit
	l := e.limiter(at(100))
	if res := e.allowN(l, "k", 50); !res.Allowed || res.Remaining != 50 {
		e.fatalf("50 of 100: %+v", res)
	}
	lower := e.limiterIn(at(10), e.clock, l.namespace)
	res := e.allow(lower, "k")
	if res.Allowed || res.Remaining != 0 || res.Limit != 10 || res.RetryAfter <= 0 {
		e.fatalf("limit lowered to 10 with 50 used: %+v, want denied with Remaining 0 and a wait", res)
	}
	if res := e.peek(lower, "k"); res.Allowed || res.Remaining != 0 || res.ResetAfter <= 0 {
		e.fatalf("Peek with the limit lowered to 10 and 50 used: %+v, want denied with Remaining 0", res)
	}
	higher := e.limiterIn(at(1000), e.clock, l.namespace)
	if res := e.peek(higher, "k"); res.Remaining != 950 || res.Limit != 1000 {
		e.fatalf("limit raised to 1,000 with 50 used: %+v, want Remaining 950", res)
	}
	if res := e.allowN(higher, "k", 950); !res.Allowed || res.Remaining != 0 {
		e.fatalf("950 more at 1,000: %+v, want admitted with Remaining 0", res)
	}
	// Random limits (and for the buckets, rates) on one live key: every
	// result in range.
	rng := rand.New(rand.NewPCG(15, 16))
	for step := range 300 {
		limit := 1 + rng.Int64N(200)
		alg := at(limit)
		if rng.IntN(2) == 0 {
			alg = e.c.build(limit, e.c.window)
		}
		cur := e.limiterIn(alg, e.clock, l.namespace)
		if !e.cfg.storeClock {
			e.clock.Advance(time.Duration(rng.Int64N(int64(e.c.window / 10))).Truncate(time.Microsecond))
		}
		cost := 1 + rng.Int64N(limit)
		res := e.allowN(cur, "k", cost)
		if res.Limit != limit || res.Remaining < 0 || res.Remaining > limit || res.RetryAfter < 0 || res.ResetAfter < 0 ||
			res.Allowed != (res.RetryAfter == 0) || (res.Allowed && res.Remaining > limit-cost) {
			e.fatalf("step %d, limit %d, cost %d: %+v out of range", step, limit, cost, res)
		}
	}
}

// quotaChange: a key used 50 of a limit (burst, capacity) of 100 at one
// instant; lowered to 10 it has Remaining 0 and waits exactly until what
// it used has expired (the windows: all 50 at once) or refilled at its rate
// down to 9 (the buckets: 41 intervals), and then admits what the family
// frees: the whole 10, or one. Raised to 1,000 instead, it keeps the 50:
// Remaining 950, and exactly 950 more.
func quotaChange(e *env) {
	l := e.limiter(e.withLimit(100))
	if res := e.allowN(l, "k", 50); !res.Allowed || res.Remaining != 50 {
		e.fatalf("50 of 100: %+v", res)
	}
	lower := e.limiterIn(e.withLimit(10), e.clock, l.namespace)
	wait, back := e.c.fullBack, int64(10) // windows: every unit used expires at once
	if algo.FamilyOf(e.c.kind) == algo.FamilyBucket {
		wait, back = e.c.costBack(50-10+1), 1
	}
	if res := e.peek(lower, "k"); res.Allowed || res.Remaining != 0 || res.Limit != 10 || res.RetryAfter != wait {
		e.fatalf("limit lowered to 10 with 50 used: %+v, want denied, Remaining 0, RetryAfter %v", res, wait)
	}
	if res := e.allow(lower, "k"); res.Allowed || res.RetryAfter != wait {
		e.fatalf("a request with the limit lowered to 10 and 50 used: %+v, want denied with RetryAfter %v", res, wait)
	}
	e.clock.Advance(wait - time.Microsecond)
	if res := e.allow(lower, "k"); res.Allowed {
		e.fatalf("1µs before the lowered key's RetryAfter %v: %+v, want denied", wait, res)
	}
	e.clock.Advance(time.Microsecond)
	if got := e.count(lower, "k"); got != back {
		e.fatalf("at the lowered key's RetryAfter %v: %d admitted, want %d", wait, got, back)
	}

	raised := e.limiter(e.withLimit(100))
	e.allowN(raised, "k", 50)
	higher := e.limiterIn(e.withLimit(1000), e.clock, raised.namespace)
	if res := e.peek(higher, "k"); res.Remaining != 950 || res.Limit != 1000 {
		e.fatalf("limit raised to 1,000 with 50 used: %+v, want Remaining 950", res)
	}
	if res := e.allowN(higher, "k", 950); !res.Allowed || res.Remaining != 0 {
		e.fatalf("950 more at 1,000: %+v, want admitted with Remaining 0", res)
	}
	if res := e.allow(higher, "k"); res.Allowed {
		e.fatalf("a request after 1,000 used of 1,000: %+v, want denied", res)
	}
}

// rateChange: a token bucket's or GCRA's rate changed on a live key keeps
// the tokens it used, converted when the first decision under the new rate
// is made, whichever decision that is, and refills them at the new rate.
// 1,000 per minute with a burst of 20, 20 used, lowered to 10 per minute
// at the same instant: denied, Remaining 0, and one request 6s later, not
// 19 at once. Converted by a peek or a denial, the 20 tokens then refill at
// 10 per minute, though 600ms at the old rate would have refilled 10.
// Raised from 10 to 1,000 per minute with 20 used, one token is back 60ms
// later. The windows' rate is their limit, which quota_change covers.
func rateChange(e *env) {
	if algo.FamilyOf(e.c.kind) != algo.FamilyBucket {
		e.t.Skip("the windows' rate is their limit per window (quota_change)")
	}
	build := func(perMinute, burst int64) algorithms.Algorithm {
		alg, err := e.c.kind.New(algorithms.Params{Limit: perMinute, Window: time.Minute, Burst: burst})
		if err != nil {
			e.t.Fatal(err)
		}
		return alg
	}
	fast, slow := build(1000, 20), build(10, 20)
	for _, first := range []string{"allow", "peek", "denial"} {
		l := e.limiter(fast)
		if res := e.allowN(l, "k", 20); !res.Allowed {
			e.fatalf("20 of 20 at 1,000 per minute: %+v", res)
		}
		lowered := e.limiterIn(slow, e.clock, l.namespace)
		start := e.clock.Now()
		switch first {
		case "peek":
			if res := e.peek(lowered, "k"); res.Allowed || res.Remaining != 0 || res.RetryAfter != 6*time.Second {
				e.fatalf("a peek at 10 per minute after 20 of 20 used: %+v, want denied, Remaining 0, RetryAfter 6s", res)
			}
		case "denial":
			if res := e.allow(lowered, "k"); res.Allowed || res.Remaining != 0 || res.RetryAfter != 6*time.Second {
				e.fatalf("a request at 10 per minute after 20 of 20 used: %+v, want denied, RetryAfter 6s", res)
			}
		}
		if first != "allow" {
			// Converted: 600ms later the 20 tokens have refilled at 10 per
			// minute (a tenth of one), not at 1,000.
			e.clock.Advance(600 * time.Millisecond)
			if res := e.allow(lowered, "k"); res.Allowed || res.RetryAfter != 5400*time.Millisecond {
				e.fatalf("600ms after a %s converted the key to 10 per minute: %+v, want denied with RetryAfter 5.4s", first, res)
			}
		} else if res := e.allow(lowered, "k"); res.Allowed || res.Remaining != 0 || res.RetryAfter != 6*time.Second {
			e.fatalf("20 of 20 used at 1,000 per minute, then 10 per minute: %+v, want denied, Remaining 0, RetryAfter 6s", res)
		}
		e.clock.Set(start.Add(6*time.Second - time.Microsecond))
		if res := e.allow(lowered, "k"); res.Allowed {
			e.fatalf("1µs before 6s at 10 per minute: %+v, want denied", res)
		}
		e.clock.Set(start.Add(6 * time.Second))
		if got := e.count(lowered, "k"); got != 1 {
			e.fatalf("6s after the rate was lowered (%s first): %d admitted, want 1", first, got)
		}
		e.clock.Set(start)
	}

	l := e.limiter(slow)
	e.allowN(l, "k", 20)
	raised := e.limiterIn(fast, e.clock, l.namespace)
	if res := e.allow(raised, "k"); res.Allowed || res.Remaining != 0 || res.RetryAfter != 60*time.Millisecond {
		e.fatalf("20 of 20 used at 10 per minute, then 1,000 per minute: %+v, want denied, RetryAfter 60ms", res)
	}
	e.clock.Advance(60 * time.Millisecond)
	if got := e.count(raised, "k"); got != 1 {
		e.fatalf("60ms after the rate was raised: %d admitted, want 1", got)
	}
}
