package algo_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// refundAlgorithms are everyAlgorithm's, and buckets whose emission interval
// is not a whole microsecond.
func refundAlgorithms() []algorithms.Algorithm {
	odd := algorithms.Rate{Count: 3, Period: time.Second}
	return append(everyAlgorithm(7, 10*time.Second),
		algorithms.TokenBucket{Capacity: 5, Refill: odd},
		algorithms.GCRA{Rate: odd, Burst: 4})
}

// charge is an admitted request: its Result.At, which a refund names it by,
// the time it acts at (later than At for a booking that waits), and the
// cost still charged.
type charge struct {
	at, act  time.Time
	cost     int64
	refunded bool
}

// TestRefundNeverLetsMoreThrough runs random admissions, bookings and
// refunds of earlier admissions (at once or later, in full or in part,
// after other requests or not) and checks that what was admitted and not
// refunded is a history the algorithm admits on its own: replayed in time
// order on an empty key, every request is admitted. A refund that gave back
// more than the refunded request took would let through a request that this
// history has no room for.
func TestRefundNeverLetsMoreThrough(t *testing.T) {
	for _, alg := range refundAlgorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			refunds := 0
			for seed := range uint64(60) {
				rng := rand.New(rand.NewPCG(seed, 99))
				var state algo.State
				var kept []charge
				clock := t0
				for range 300 {
					if rng.IntN(3) > 0 {
						clock = clock.Add(
							time.Duration(rng.Int64N(int64(1500 * time.Millisecond))).Truncate(time.Microsecond),
						)
					}
					if rng.IntN(10) < 4 && len(kept) > 0 {
						// Refund an admission, most often a recent one.
						c := &kept[max(0, len(kept)-1-rng.IntN(min(len(kept), 1+rng.IntN(8))))]
						if c.refunded {
							continue
						}
						n := 1 + rng.Int64N(c.cost)
						state, _ = algo.Refund(alg, state, clock, c.at, n)
						c.cost -= n
						c.refunded = true
						refunds++
						continue
					}
					cost := 1 + rng.Int64N(min(algo.MaxCost(alg), 3))
					var res algorithms.Result
					act := clock
					if algo.Reserves(alg) && rng.IntN(2) == 0 {
						var delay time.Duration
						maxWait := time.Duration(rng.Int64N(int64(5 * time.Second))).Truncate(time.Microsecond)
						state, res, delay = algo.Reserve(alg, state, clock, cost, maxWait)
						act = clock.Add(delay)
					} else {
						state, res = algo.Decide(alg, state, clock, cost)
					}
					if res.Allowed {
						kept = append(kept, charge{at: res.At, act: act, cost: cost})
					}
				}
				slices.SortStableFunc(kept, func(a, b charge) int { return a.act.Compare(b.act) })
				var replay algo.State
				for i, c := range kept {
					if c.cost == 0 {
						continue
					}
					var res algorithms.Result
					replay, res = algo.Decide(alg, replay, c.act, c.cost)
					if !res.Allowed {
						t.Fatalf(
							"seed %d: request %d (cost %d at %v) was admitted and kept, but the kept history has no room for it: "+
								"a refund gave back too much",
							seed,
							i,
							c.cost,
							c.act.Sub(t0),
						)
					}
				}
			}
			if refunds < 1000 {
				t.Fatalf("only %d refunds ran", refunds)
			}
		})
	}
}

// TestRefundAtOnceIsExact: an admission refunded in full at once, before
// anything else happens on the key, leaves the key exactly as if the request
// had never been made: every later decision gets the same Result.
func TestRefundAtOnceIsExact(t *testing.T) {
	// Whole-microsecond intervals, so that a booking's turn is exact too.
	for _, alg := range everyAlgorithm(7, 7*time.Second) {
		t.Run(alg.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(5, 6))
			with, without := run{alg: alg}, run{alg: alg}
			clock := t0
			exact := 0
			for step := range 20_000 {
				clock = clock.Add(time.Duration(rng.Int64N(int64(2 * time.Second))).Truncate(time.Microsecond))
				if rng.IntN(3) == 0 {
					// A request made and refunded on one key only.
					cost := 1 + rng.Int64N(algo.MaxCost(alg))
					var res algorithms.Result
					if algo.Reserves(alg) && rng.IntN(2) == 0 {
						with.state, res, _ = algo.Reserve(alg, with.state, clock, cost, 3*time.Second)
					} else {
						with.state, res = algo.Decide(alg, with.state, clock, cost)
					}
					if res.Allowed {
						with.state, _ = algo.Refund(alg, with.state, clock, res.At, cost)
						exact++
					}
					continue
				}
				cost := rng.Int64N(algo.MaxCost(alg)+1) - rng.Int64N(2)*algo.MaxCost(alg)/2
				got, want := with.decide(clock, cost), without.decide(clock, cost)
				if got != want {
					t.Fatalf("step %d, cost %d: after refunds %+v, never charged %+v", step, cost, got, want)
				}
			}
			if exact < 1000 {
				t.Fatalf("only %d refunds ran", exact)
			}
		})
	}
}

// TestRefundPerAlgorithm pins what each algorithm gives back when requests
// were admitted after the refunded one, or time has passed.
func TestRefundPerAlgorithm(t *testing.T) {
	sec := time.Second
	remaining := func(alg algorithms.Algorithm, st algo.State, now time.Time) int64 {
		_, res := algo.Decide(alg, st, now, 0)
		return res.Remaining
	}
	t.Run("fixed window: only within the charge's window", func(t *testing.T) {
		alg := algorithms.FixedWindow{Limit: 10, Window: 10 * sec}
		st, first := algo.Decide(alg, nil, t0, 3)
		st, _ = algo.Decide(alg, st, t0.Add(sec), 2)
		st, _ = algo.Refund(alg, st, t0.Add(2*sec), first.At, 3)
		if got := remaining(alg, st, t0.Add(2*sec)); got != 8 {
			t.Fatalf("Remaining %d after refunding 3 of 5 in the window, want 8", got)
		}
		st, next := algo.Decide(alg, st, t0.Add(10*sec), 4)
		st, _ = algo.Refund(alg, st, t0.Add(11*sec), first.At, 3) // from the window before
		if got := remaining(alg, st, t0.Add(11*sec)); got != 6 {
			t.Fatalf("Remaining %d after refunding a charge from an earlier window, want 6 (nothing back)", got)
		}
		st, _ = algo.Refund(alg, st, t0.Add(11*sec), next.At, 10)
		if got := remaining(alg, st, t0.Add(11*sec)); got != 10 {
			t.Fatalf("Remaining %d after refunding more than was charged, want 10 (never below zero)", got)
		}
	})
	t.Run("sliding log: the oldest units when others came since", func(t *testing.T) {
		alg := algorithms.SlidingLog{Limit: 3, Window: 10 * sec}
		st, _ := algo.Decide(alg, nil, t0, 1)                // A at 0
		st, b := algo.Decide(alg, st, t0.Add(4*sec), 1)      // B at 4, refunded below
		st, _ = algo.Decide(alg, st, t0.Add(6*sec), 1)       // C at 6
		st, _ = algo.Refund(alg, st, t0.Add(7*sec), b.At, 1) // drops A's unit, not C's
		if got := remaining(alg, st, t0.Add(7*sec)); got != 1 {
			t.Fatalf("Remaining %d after a refund, want 1", got)
		}
		// Had B never been made, A's expiry at 10s would free a unit; the
		// refund freed one at once instead, and B's unit frees at 14s.
		if got := remaining(alg, st, t0.Add(12*sec)); got != 1 {
			t.Fatalf("Remaining %d at 12s, want 1 (B's unit counts until 14s)", got)
		}
		if got := remaining(alg, st, t0.Add(14*sec)); got != 2 {
			t.Fatalf("Remaining %d at 14s, want 2", got)
		}
		st, _ = algo.Refund(alg, st, t0.Add(17*sec), b.At, 1) // B has expired
		if got := remaining(alg, st, t0.Add(17*sec)); got != 3 {
			t.Fatalf("Remaining %d, want 3", got)
		}
	})
	t.Run("sliding log: part of an older record", func(t *testing.T) {
		alg := algorithms.SlidingLog{Limit: 5, Window: 10 * sec}
		st, _ := algo.Decide(alg, nil, t0, 3)                // A: 3 at 0
		st, b := algo.Decide(alg, st, t0.Add(sec), 1)        // B: 1 at 1s
		st, _ = algo.Decide(alg, st, t0.Add(2*sec), 1)       // C: 1 at 2s
		st, _ = algo.Refund(alg, st, t0.Add(2*sec), b.At, 1) // one of A's 3 goes
		if got := remaining(alg, st, t0.Add(2*sec)); got != 1 {
			t.Fatalf("Remaining %d after a refund, want 1", got)
		}
		if got := remaining(alg, st, t0.Add(10*sec)); got != 3 {
			t.Fatalf("Remaining %d once A expired, want 3 (B and C count)", got)
		}
	})
	t.Run("gcra: less what refilled since", func(t *testing.T) {
		alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2}
		st, a := algo.Decide(alg, nil, t0, 2) // empty until t0+2s
		// 500ms later half a request has refilled: the refund returns the
		// other 1.5, and the key is full again 500ms early, at t0+1.5s.
		st, _ = algo.Refund(alg, st, t0.Add(500*time.Millisecond), a.At, 2)
		if _, res := algo.Decide(alg, st, t0.Add(500*time.Millisecond), 0); res.ResetAfter != 0 || res.Remaining != 2 {
			t.Fatalf("after the refund %+v, want full", res)
		}
		st, b := algo.Decide(alg, st, t0.Add(sec), 2)  // empty until t0+3s
		st, _ = algo.Decide(alg, st, t0.Add(2*sec), 1) // empty until t0+4s
		st, _ = algo.Refund(alg, st, t0.Add(2*sec), b.At, 2)
		// Had b never been made, the key would hold the one request of
		// t0+2s: full at t0+3s. A second has refilled since b: 1 of its 2
		// comes back.
		if _, res := algo.Decide(alg, st, t0.Add(2*sec), 0); res.ResetAfter != 2*sec {
			t.Fatalf("after the refund %+v, want full in 2s", res)
		}
	})
	t.Run("gcra: a cancelled booking with bookings behind it", func(t *testing.T) {
		alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}
		st, _, _ := algo.Reserve(alg, nil, t0, 1, 10*sec) // now
		st, b, d := algo.Reserve(alg, st, t0, 1, 10*sec)  // turn at 1s
		st, _, _ = algo.Reserve(alg, st, t0, 1, 10*sec)   // turn at 2s
		if d != sec || !b.At.Equal(t0.Add(sec)) {
			t.Fatalf("booking: delay %v At %v", d, b.At.Sub(t0))
		}
		st, _ = algo.Refund(alg, st, t0, b.At, 1)
		// The booking at 2s keeps its turn: giving b's turn back would let a
		// new request go at 2s beside it.
		if _, res := algo.Decide(alg, st, t0.Add(2*sec), 1); res.Allowed {
			t.Fatalf("a request at 2s was admitted beside the booking there: %+v", res)
		}
		st, _ = algo.Refund(alg, st, t0, t0.Add(2*sec), 1) // the last booking
		if _, res := algo.Decide(alg, st, t0.Add(2*sec), 1); !res.Allowed {
			t.Fatalf("the last booking's turn did not come back: %+v", res)
		}
	})
}

func TestCheckRefund(t *testing.T) {
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2}
	for _, c := range []struct {
		name string
		now  time.Time
		at   time.Time
		n    int64
		want error
	}{
		{"zero", t0, t0, 0, algorithms.ErrInvalidCost},
		{"negative", t0, t0, -1, algorithms.ErrInvalidCost},
		{"above the burst", t0, t0, 3, algorithms.ErrCostExceedsLimit},
		{"at before 1970", t0, time.Unix(-1, 0), 1, algorithms.ErrInvalidTime},
		{"now zero", time.Time{}, t0, 1, algorithms.ErrInvalidTime},
	} {
		if err := algo.CheckRefund(alg, c.now, c.at, c.n); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := algo.CheckRefund(alg, t0, t0, 2); err != nil {
		t.Errorf("a valid refund: %v", err)
	}
}

// plannedRequest is a request of cost at a time, decided under a plan.
type plannedRequest struct {
	alg  algorithms.Algorithm
	at   time.Time
	cost int64
}

func (r plannedRequest) String() string {
	return fmt.Sprintf("%s cost %d at %v", r.alg, r.cost, r.at.Sub(t0))
}

// TestRefundAcrossLimitChanges: the key's limit changes between the charge
// and the refund (a plan change), back and forth with requests under each
// in between, the charge may be a booking, and clocks step back; a refund
// still never lets more through than if the refunded request had never
// been made: at the refund, a burst of requests gets no more through on the
// key that had it than on a key that never did. (The key's history is under the
// plan it had when it was charged: a charge under another rate converts the
// key's state, which changes what later rates see whether or not the charge
// is refunded.)
func TestRefundAcrossLimitChanges(t *testing.T) {
	sec := time.Second
	variants := [][]algorithms.Algorithm{
		{
			algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10},
			algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10},
			algorithms.GCRA{Rate: algorithms.Rate{Count: 7, Period: sec}, Burst: 4},
		},
		{
			algorithms.TokenBucket{Capacity: 10, Refill: algorithms.PerSecond(10)},
			algorithms.TokenBucket{Capacity: 3, Refill: algorithms.PerSecond(1)},
			algorithms.TokenBucket{Capacity: 6, Refill: algorithms.Rate{Count: 3, Period: sec}},
		},
		{algorithms.SlidingLog{Limit: 10, Window: 10 * sec}, algorithms.SlidingLog{Limit: 3, Window: 10 * sec}},
		{
			algorithms.SlidingWindow{Limit: 10, Window: 10 * sec, SubWindows: 5},
			algorithms.SlidingWindow{Limit: 4, Window: 10 * sec, SubWindows: 5},
		},
		{algorithms.FixedWindow{Limit: 10, Window: 10 * sec}, algorithms.FixedWindow{Limit: 2, Window: 10 * sec}},
	}
	type op = plannedRequest
	burst := func(alg algorithms.Algorithm, st algo.State, now time.Time) (n int64) {
		for ; n <= algo.MaxCost(alg); n++ {
			var res algorithms.Result
			if st, res = algo.Decide(alg, st, now, 1); !res.Allowed {
				return n
			}
		}
		return n
	}
	for _, algs := range variants {
		t.Run(algs[0].Kind().String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			checked := 0
			for range 8000 {
				clock := t0
				var ops []op
				charge := algs[rng.IntN(len(algs))] // the plan before
				for range rng.IntN(12) {
					clock = clock.Add(time.Duration(rng.Int64N(int64(3*sec))) - sec/2).Truncate(time.Microsecond)
					ops = append(ops, op{charge, clock, 1 + rng.Int64N(algo.MaxCost(charge))})
				}
				replay := func() algo.State {
					var st algo.State
					for _, o := range ops {
						st, _ = algo.Decide(o.alg, st, o.at, o.cost)
					}
					return st
				}
				with, without := replay(), replay()
				clock = clock.Add(time.Duration(rng.Int64N(int64(sec)))).Truncate(time.Microsecond)
				n := 1 + rng.Int64N(algo.MaxCost(charge))
				var res algorithms.Result
				if algo.Reserves(charge) && rng.IntN(3) == 0 {
					with, res, _ = algo.Reserve(
						charge,
						with,
						clock,
						n,
						time.Duration(rng.Int64N(int64(5*sec))).Truncate(time.Microsecond),
					)
				} else {
					with, res = algo.Decide(charge, with, clock, n)
				}
				if !res.Allowed {
					continue
				}
				// Requests under any plan between the charge and the refund,
				// the same on both keys: the sample counts only if each gets
				// the same answer on both, so that both keys' histories hold
				// the same requests but the refunded one.
				var between []op
				same := true
				for range rng.IntN(4) {
					clock = clock.Add(time.Duration(rng.Int64N(int64(1500 * time.Millisecond)))).
						Truncate(time.Microsecond)
					o := op{algs[rng.IntN(len(algs))], clock, rng.Int64N(3)}
					o.cost = min(o.cost, algo.MaxCost(o.alg))
					var a, b algorithms.Result
					with, a = algo.Decide(o.alg, with, o.at, o.cost)
					without, b = algo.Decide(o.alg, without, o.at, o.cost)
					same = same && a.Allowed == b.Allowed
					between = append(between, o)
				}
				if !same {
					continue
				}
				// The refund goes into the state charged, as a Result's
				// receipt makes it (Result.Charged); the burst after it
				// runs under whatever plan the key has by then.
				plan := algs[rng.IntN(len(algs))]
				if rng.IntN(2) == 0 {
					clock = clock.Add(time.Duration(rng.Int64N(int64(2 * sec)))).Truncate(time.Microsecond)
				}
				dbg := fmt.Sprintf("charged, then %v: %+v", between, with)
				with, _ = algo.Refund(charge, with, clock, res.At, n)
				dbg += fmt.Sprintf(" refunded %+v, never %+v", with, without)
				if got, want := burst(plan, with, clock), burst(plan, without, clock); got > want {
					t.Fatalf(
						"after %v, %s charged %d at %v and refunded at %v, under %s: a burst gets %d through, %d had it never "+
							"been charged (%s)",
						ops,
						charge,
						n,
						res.At.Sub(t0),
						clock.Sub(t0),
						plan,
						got,
						want,
						dbg,
					)
				}
				checked++
			}
			if checked < 1000 {
				t.Fatalf("only %d refunds checked", checked)
			}
		})
	}
}

// A refund made at once still gives back exactly what it names when the
// admission changed the key's rate count: the key then decides as if the
// request had been a peek, which converts the key all the same. The rate
// left (1 per second, 10 of burst) still held tokens, more than the new
// rate's capacity (3 at 10 per second) ahead of the admission.
func TestRefundAtOnceAfterARateChange(t *testing.T) {
	for _, pair := range [][2]algorithms.Algorithm{
		{algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10},
			algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 3}},
		{algorithms.TokenBucket{Capacity: 10, Refill: algorithms.PerSecond(1)},
			algorithms.TokenBucket{Capacity: 3, Refill: algorithms.PerSecond(10)}},
	} {
		before, after := pair[0], pair[1]
		at := t0.Add(500 * time.Millisecond)
		history := func(cost int64) (algo.State, algorithms.Result) {
			st, _ := algo.Decide(before, nil, t0, 1)
			return algo.Decide(after, st, at, cost)
		}
		st, res := history(1)
		if !res.Allowed {
			t.Fatalf("%s: the admission after the change: %+v", after, res)
		}
		st, ok := algo.Refund(after, st, at, res.At, 1)
		if !ok {
			t.Fatalf("%s: a refund at once of the admission that changed the rate count gave nothing back", after)
		}
		never, _ := history(0)
		for _, d := range []time.Duration{0, 50 * time.Millisecond, 2 * time.Second} {
			_, got := algo.Decide(after, shallowCopy(st), at.Add(d), 0)
			_, want := algo.Decide(after, shallowCopy(never), at.Add(d), 0)
			if got != want {
				t.Fatalf("%s, %v after the refund: %+v; had the admission been a peek, %+v", after, d, got, want)
			}
		}
	}
}

// A refund on a key whose state no longer counts changes nothing, so that a
// store that still holds the state (for a lagging clock reading) and one
// that has dropped it agree.
func TestRefundOfAStateThatNoLongerCounts(t *testing.T) {
	for _, alg := range everyAlgorithm(7, 10*time.Second) {
		st, res := algo.Decide(alg, nil, t0, 3)
		if _, changed := algo.Refund(alg, st, t0.Add(res.ResetAfter), res.At, 3); changed {
			t.Errorf("%s: a refund ResetAfter after the charge changed the state", alg)
		}
		// A key emptied by a refund has nothing left to give back, even to
		// a refund that names a recent charge.
		st, res = algo.Decide(alg, nil, t0, 1)
		st, _ = algo.Refund(alg, st, t0, res.At, 1)
		if _, changed := algo.Refund(alg, st, t0.Add(time.Second), res.At, 1); changed {
			t.Errorf("%s: a refund of an empty key changed the state", alg)
		}
	}
}
