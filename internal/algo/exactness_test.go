package algo_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// everyAlgorithm builds each algorithm for a limit per window: the windowed
// ones with that limit, the buckets with that burst refilled at limit per
// window.
func everyAlgorithm(limit int64, window time.Duration) []algorithms.Algorithm {
	rate := algorithms.Rate{Count: limit, Period: window}
	return []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: limit, Window: window},
		algorithms.SlidingLog{Limit: limit, Window: window},
		algorithms.CompactLog{Limit: limit, Window: window},
		algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: 5},
		algorithms.TokenBucket{Capacity: limit, Refill: rate},
		algorithms.GCRA{Rate: rate, Burst: limit},
	}
}

// TestStaleTimeIsTheHeldClock: a request whose now is behind the latest time
// the key has seen is decided exactly as if the clock had been held at that
// latest time: the same admission and Remaining, with RetryAfter and
// ResetAfter longer by the gap, and an admission made at the held time.
func TestStaleTimeIsTheHeldClock(t *testing.T) {
	for _, alg := range everyAlgorithm(7, 10*time.Second) {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(11, 12))
			stale, held := run{alg: alg}, run{alg: alg}
			clock, latest := t0, time.Time{}
			// Past 2^63/2^49 = 16,384 admissions a total kept in int64
			// would overflow; 60,000 steps admit over 20,000.
			for step := range 60_000 {
				clock = clock.Add(time.Duration(rng.Int64N(int64(time.Second))).Truncate(time.Microsecond))
				now := clock
				switch rng.IntN(4) {
				case 0: // up to 50ms behind
					now = clock.Add(-time.Duration(rng.Int64N(int64(50 * time.Millisecond))).Truncate(time.Microsecond))
				case 1: // whole windows behind
					now = clock.Add(-time.Duration(1+rng.Int64N(3)) * 10 * time.Second)
				}
				cost := 1 + rng.Int64N(algo.MaxCost(alg))
				if rng.IntN(5) == 0 {
					// An inspection changes nothing, so it does not move
					// the key's latest time either.
					cost = 0
				} else {
					latest = maxTime(latest, now)
				}
				got := stale.decide(now, cost)
				want := held.decide(maxTime(latest, now), cost)
				gap := maxTime(latest, now).Sub(now)
				if want.RetryAfter > 0 {
					want.RetryAfter += gap
				}
				if want.ResetAfter > 0 {
					want.ResetAfter += gap
				}
				// At is never before now nor after the held clock; an
				// admission is made exactly at the held clock. (The fixed
				// window decides in the window it recorded and reports that
				// window's start; a denial of cost 1 is not remembered, so a
				// later stale request may be decided earlier, the same way.)
				if got.At.Before(now) || got.At.After(want.At) ||
					got.Allowed && !got.At.Equal(want.At) && alg.Kind().String() != "fixed_window" {
					t.Fatalf(
						"step %d, cost %d: decided at %v, now %v, the held clock %v",
						step,
						cost,
						got.At,
						now,
						want.At,
					)
				}
				got.At, want.At = time.Time{}, time.Time{}
				if got != want {
					t.Fatalf(
						"step %d, cost %d, now %v behind the latest %v:\n stale %+v\n held  %+v",
						step,
						cost,
						gap,
						latest.Format(time.RFC3339Nano),
						got,
						want,
					)
				}
			}
		})
	}
}

// TestMinimalStaleReproduction: with 2 per second, requests at 0, 0, 1.5s,
// 0.9s and 1.9s admit 4, as with the clock held at its latest reading; a
// sliding log that let the request at 0.9s see only one record would admit 5,
// three of them within one second.
func TestMinimalStaleReproduction(t *testing.T) {
	r := run{alg: algorithms.SlidingLog{Limit: 2, Window: time.Second}}
	var got []bool
	for _, at := range []time.Duration{0, 0, 1500 * time.Millisecond, 900 * time.Millisecond, 1900 * time.Millisecond} {
		got = append(got, r.decide(t0.Add(at), 1).Allowed)
	}
	if want := []bool{true, true, true, true, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("admitted %v, want %v", got, want)
	}
}

// TestLimitChangesKeepUsage lowers and raises the limit of every algorithm on
// a live key: what was used carries over, and every field stays in range.
func TestLimitChangesKeepUsage(t *testing.T) {
	for i, name := range []string{"fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"} {
		t.Run(name, func(t *testing.T) {
			// The limit, capacity or burst changes; a bucket keeps its
			// rate of 100 per minute (see TestRateChanges).
			at := func(limit int64) algorithms.Algorithm {
				switch a := everyAlgorithm(limit, time.Minute)[i].(type) {
				case algorithms.TokenBucket:
					a.Refill = algorithms.PerMinute(100)
					return a
				case algorithms.GCRA:
					a.Rate = algorithms.PerMinute(100)
					return a
				default:
					return a
				}
			}
			r := run{alg: at(100)}
			if res := r.decide(t0, 50); !res.Allowed || res.Remaining != 50 {
				t.Fatalf("50 of 100: %+v", res)
			}
			// Lowered to 10 with 50 used: nothing left, and a wait.
			r.alg = at(10)
			res := r.decide(t0, 1)
			if res.Allowed || res.Remaining != 0 || res.Limit != 10 || res.RetryAfter <= 0 {
				t.Fatalf("limit lowered to 10 with 50 used: %+v, want denied with Remaining 0", res)
			}
			if p := r.decide(t0, 0); p.Remaining != 0 || p.Allowed {
				t.Fatalf("peek after lowering: %+v", p)
			}
			// Raised to 1,000 with 50 used: 950 left.
			r.alg = at(1000)
			if res := r.decide(t0, 0); res.Remaining != 950 || res.Limit != 1000 {
				t.Fatalf("limit raised to 1,000 with 50 used: %+v, want Remaining 950", res)
			}
			if res := r.decide(t0, 950); !res.Allowed || res.Remaining != 0 {
				t.Fatalf("950 more at 1,000: %+v", res)
			}
			// Lowered again, random traffic: every result in range.
			rng := rand.New(rand.NewPCG(3, uint64(i)))
			now := t0
			for step := range 2000 {
				limit := 1 + rng.Int64N(1000)
				r.alg = at(limit)
				now = now.Add(time.Duration(rng.Int64N(int64(10 * time.Second))).Truncate(time.Microsecond))
				cost := rng.Int64N(limit + 1)
				res := r.decide(now, cost)
				if res.Limit != limit || res.Remaining < 0 || res.Remaining > limit || res.RetryAfter < 0 || res.ResetAfter < 0 ||
					res.Allowed != (res.RetryAfter == 0) ||
					(res.Allowed && cost > 0 && res.Remaining > limit-cost) {
					t.Fatalf("step %d, limit %d, cost %d: %+v out of range", step, limit, cost, res)
				}
			}
		})
	}
}

// TestRateChanges: a changed rate keeps what a key used, in tokens,
// converted at the first decision under the new rate: a key moved to a
// faster rate (a free tier upgraded to a paid one) keeps the tokens it used
// and gets them back at the new rate; one moved to a slower rate keeps them
// too, and waits for the slower rate to refill them. Lowering never hands
// back quota.
func TestRateChanges(t *testing.T) {
	for _, build := range []func(rate algorithms.Rate, burst int64) algorithms.Algorithm{
		func(rate algorithms.Rate, burst int64) algorithms.Algorithm {
			return algorithms.TokenBucket{Capacity: burst, Refill: rate}
		},
		func(rate algorithms.Rate, burst int64) algorithms.Algorithm {
			return algorithms.GCRA{Rate: rate, Burst: burst}
		},
	} {
		free, paid := build(algorithms.PerHour(100), 100), build(algorithms.PerHour(10_000), 10_000)
		t.Run(free.Kind().String(), func(t *testing.T) {
			r := run{alg: free}
			r.decide(t0, 100)
			r.alg = paid
			if res := r.decide(t0, 0); res.Remaining != 9_900 || res.ResetAfter != 36*time.Second {
				t.Fatalf("upgraded after using 100 of 100 per hour: %+v, want Remaining 9,900, full again in 36s", res)
			}
			r.decide(t0, 9_900)
			// 10,000 used, moved back to 100 per hour with a burst of 100:
			// Remaining 0 until 9,901 tokens have refilled at 100 per hour,
			// 99.01 hours, and full again after 100.
			r.alg = free
			res := r.decide(t0, 1)
			if wait := 99*time.Hour + 36*time.Second; res.Allowed || res.Remaining != 0 || res.RetryAfter != wait ||
				res.ResetAfter != 100*time.Hour {
				t.Fatalf(
					"downgraded after using 10,000: %+v, want denied, RetryAfter %v, full again in 100h",
					res,
					wait,
				)
			}
			if res := r.decide(t0.Add(99*time.Hour+36*time.Second-time.Microsecond), 1); res.Allowed {
				t.Fatalf("1µs before the downgraded key's RetryAfter: %+v, want denied", res)
			}
			if res := r.decide(t0.Add(99*time.Hour+36*time.Second), 1); !res.Allowed || res.Remaining != 0 {
				t.Fatalf("at the downgraded key's RetryAfter: %+v, want one admitted", res)
			}

			// 1,000 per minute with a burst of 20, all 20 used, lowered to
			// 10 per minute with a burst of 20 at the same instant: denied,
			// one token back 6s later, not 19 more at once.
			r = run{alg: build(algorithms.PerMinute(1000), 20)}
			r.decide(t0, 20)
			r.alg = build(algorithms.PerMinute(10), 20)
			if res := r.decide(t0, 1); res.Allowed || res.Remaining != 0 || res.RetryAfter != 6*time.Second {
				t.Fatalf("20 of 20 used at 1,000 per minute, then 10 per minute: %+v, want denied, RetryAfter 6s", res)
			}
			if got := admitted(&r, t0.Add(6*time.Second)); got != 1 {
				t.Fatalf("6s after the rate was lowered: %d admitted, want 1", got)
			}

			// The tokens are those used when the new rate is first decided:
			// 20 used at 1,000 per minute, 600ms later 10 of them have
			// refilled; from then on they refill at 10 per minute.
			r = run{alg: build(algorithms.PerMinute(1000), 20)}
			r.decide(t0, 20)
			r.alg = build(algorithms.PerMinute(10), 20)
			if res := r.decide(t0.Add(600*time.Millisecond), 0); res.Remaining != 10 || res.ResetAfter != time.Minute {
				t.Fatalf("10 of 20 used when the rate changes: %+v, want Remaining 10, full in 1m", res)
			}

			// Fractions of a token carry over exactly: 1.5 tokens used at 2
			// per second, then 4 per second, are 1.5 tokens, 375ms to drain.
			r = run{alg: build(algorithms.PerSecond(2), 2)}
			r.decide(t0, 2)
			r.decide(t0.Add(750*time.Millisecond), 1)
			r.alg = build(algorithms.PerSecond(4), 4)
			if res := r.decide(t0.Add(750*time.Millisecond), 0); res.Remaining != 2 ||
				res.ResetAfter != 375*time.Millisecond {
				t.Fatalf("1.5 of 2 used, then 4 per second: %+v, want Remaining 2, full in 375ms", res)
			}
			// 1 token used at 3 per second (333,333 1/3µs to drain), then 7
			// per second: 142,857 1/7µs, held exactly in the new rate's
			// sevenths of a microsecond; full again 142,858µs later, on the
			// microsecond.
			r = run{alg: build(algorithms.Rate{Count: 3, Period: time.Second}, 3)}
			r.decide(t0, 1)
			r.alg = build(algorithms.Rate{Count: 7, Period: time.Second}, 7)
			if res := r.decide(t0, 0); res.Remaining != 6 || res.ResetAfter != 142858*time.Microsecond {
				t.Fatalf(
					"1 of 3 used at 3 per second, then 7 per second: %+v, want Remaining 6, full in 142,858µs",
					res,
				)
			}
		})
	}
}

// admitted sends requests of cost 1 at now until one is denied, and
// returns how many were admitted.
func admitted(r *run, now time.Time) int {
	n := 0
	for ; n < 1000 && r.decide(now, 1).Allowed; n++ {
	}
	return n
}

// TestScopes: a per-second and a per-hour limit of one algorithm never share
// state; a changed limit keeps it.
func TestScopes(t *testing.T) {
	for _, pair := range [][2]algorithms.Algorithm{
		{algorithms.FixedWindow{Limit: 2, Window: time.Second}, algorithms.FixedWindow{Limit: 1000, Window: time.Hour}},
		{algorithms.SlidingLog{Limit: 2, Window: time.Second},
			algorithms.SlidingLog{Limit: 2, Window: 1001 * time.Millisecond}},
		{algorithms.SlidingWindow{Limit: 2, Window: time.Second, SubWindows: 10},
			algorithms.SlidingWindow{Limit: 2, Window: time.Second, SubWindows: 5}},
		{algorithms.TokenBucket{Capacity: 2, Refill: algorithms.PerSecond(2)},
			algorithms.TokenBucket{Capacity: 2, Refill: algorithms.PerMinute(120)}},
		{algorithms.GCRA{Rate: algorithms.PerSecond(2), Burst: 2}, algorithms.GCRA{Rate: algorithms.PerHour(2), Burst: 2}},
	} {
		if algo.ScopeOf(pair[0]) == algo.ScopeOf(pair[1]) {
			t.Errorf("%#v and %#v have the same scope %v", pair[0], pair[1], algo.ScopeOf(pair[0]))
		}
	}
	if a, b := (algorithms.GCRA{Rate: algorithms.PerSecond(2), Burst: 2}),
		(algorithms.GCRA{Rate: algorithms.PerSecond(20), Burst: 40}); algo.ScopeOf(a) != algo.ScopeOf(b) {
		t.Errorf("a changed rate count and burst changed the scope: %v, %v", algo.ScopeOf(a), algo.ScopeOf(b))
	}
	for _, tt := range []struct {
		scope algo.Scope
		want  string
	}{
		{algo.Scope{Window: time.Minute}, "1m"},
		{algo.Scope{Window: 90 * time.Second}, "90s"},
		{algo.Scope{Window: 1500 * time.Millisecond}, "1500ms"},
		{algo.Scope{Window: 30 * 24 * time.Hour}, "720h"},
		{algo.Scope{Window: 1001 * time.Microsecond}, "1001us"},
		{algo.Scope{Window: time.Minute, SubWindows: 6}, "1m/6"},
	} {
		if got := tt.scope.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.scope, got, tt.want)
		}
	}
}

// TestWrongStateTypePanics: a state of another algorithm's type is a store's
// bug, never read as an idle key that admits.
func TestWrongStateTypePanics(t *testing.T) {
	gcra := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}
	state, _ := algo.Decide(gcra, nil, t0, 1)
	for _, alg := range everyAlgorithm(1, time.Second) {
		if algo.FamilyOf(alg.Kind()) == algo.FamilyBucket {
			continue // the token bucket and GCRA share one step, and its state
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s.Decide on a *GCRAState did not panic", alg.Kind().String())
				}
			}()
			algo.Decide(alg, state, t0, 1)
		}()
	}
}

func TestCheckDecision(t *testing.T) {
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 3}
	for _, tt := range []struct {
		name string
		alg  algorithms.Algorithm
		now  time.Time
		cost int64
		want error
	}{
		{"valid", alg, t0, 3, nil},
		{"inspection", alg, t0, 0, nil},
		{"invalid algorithm", algorithms.GCRA{Rate: algorithms.PerSecond(1)}, t0, 1, algorithms.ErrInvalidAlgorithm},
		{"inspection of cost 3", alg, t0, -3, nil},
		{"inspection above the burst", alg, t0, -4, algorithms.ErrCostExceedsLimit},
		{"cost above the burst", alg, t0, 4, algorithms.ErrCostExceedsLimit},
		{"zero time", alg, time.Time{}, 1, algorithms.ErrInvalidTime},
		{"before 1970", alg, time.Unix(-1, 0), 1, algorithms.ErrInvalidTime},
		{"after MaxUnixMicro", alg, time.UnixMicro(algo.EnvelopeMaxUnixMicro).Add(time.Microsecond), 1,
			algorithms.ErrInvalidTime},
		{"the epoch", alg, time.Unix(0, 0), 1, nil},
		{"MaxUnixMicro", alg, time.UnixMicro(algo.EnvelopeMaxUnixMicro), 1, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := algo.CheckDecision(tt.alg, tt.now, tt.cost)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("CheckDecision = %v, want %v", err, tt.want)
			}
		})
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// TestLogTotalsWrap runs the sliding log and the sliding window counter at
// the largest limit, 2^50, with requests of 2^49 one quantum apart, so that a
// record always stays live: their running totals wrap at 2^52 every eight
// admissions and pass 2^63 within 20,000. Every decision, and every denied
// probe's RetryAfter, must match a count of what the window holds.
func TestLogTotalsWrap(t *testing.T) {
	const limit, half = 1 << 50, 1 << 49
	for _, tc := range []struct {
		alg     algorithms.Algorithm
		quantum int64 // µs: 1 for the log, the sub-window for the counter
	}{
		{algorithms.SlidingLog{Limit: limit, Window: 2 * time.Microsecond}, 1},
		{algorithms.SlidingWindow{Limit: limit, Window: 2 * time.Millisecond, SubWindows: 2}, 1000},
	} {
		alg, quantum := tc.alg, tc.quantum
		t.Run(alg.Kind().String(), func(t *testing.T) {
			window := algo.ScopeOf(alg).Window.Microseconds()
			type rec struct{ at, cost int64 }
			var admitted []rec // oldest first, those still in the window
			r := run{alg: alg}
			rng := rand.New(rand.NewPCG(21, 22))
			now := t0
			decide := func(step int, cost int64) {
				t.Helper()
				stamp := now.UnixMicro() / quantum * quantum
				kept, inWindow := admitted[:0], int64(0)
				for _, a := range admitted {
					if stamp-a.at < window {
						inWindow += a.cost
						kept = append(kept, a)
					}
				}
				admitted = kept
				res := r.decide(now, cost)
				want := algorithms.Result{
					Allowed:   inWindow+cost <= limit,
					Limit:     limit,
					Remaining: max(0, limit-inWindow),
					At:        res.At,
				}
				if want.Allowed {
					want.Remaining -= cost
					want.ResetAfter = time.Duration(stamp+window-now.UnixMicro()) * time.Microsecond
					admitted = append(admitted, rec{stamp, cost})
				} else {
					excess := inWindow + cost - limit
					for _, a := range admitted {
						if excess -= a.cost; excess <= 0 {
							want.RetryAfter = time.Duration(a.at+window-now.UnixMicro()) * time.Microsecond
							break
						}
					}
					newest := admitted[len(admitted)-1].at
					want.ResetAfter = time.Duration(newest+window-now.UnixMicro()) * time.Microsecond
				}
				if want.SetCharged(alg, cost); res != want {
					t.Fatalf(
						"step %d: %d in the window, cost %d:\n got  %+v\n want %+v",
						step,
						inWindow,
						cost,
						res,
						want,
					)
				}
			}
			for step := range 20_000 {
				now = now.Add(time.Duration(quantum) * time.Microsecond)
				decide(step, half)
				// Denied probes: one waits for the older record, one for both.
				decide(step, 1+rng.Int64N(half))
				decide(step, half+1+rng.Int64N(half-1))
			}
		})
	}
}

// records is the number of records a sliding log's state holds, read by
// reflection: stores and tests outside the package keep states opaque.
func records(state any) int {
	return reflect.ValueOf(state).Elem().FieldByName("Records").Len()
}
