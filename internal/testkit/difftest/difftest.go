// Package difftest holds ratewise's differential tests to the letter: the
// random sequences of decisions and refunds that a store's own language (a
// Lua script, a SQL function) must decide exactly as the Go steps do, field
// by field. A store's test runs them on its target with Run.
package difftest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the zones, on a machine without its own

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// Steps is how many steps one sequence takes; Sequences sequences of it
// make 10,000 steps per algorithm.
const (
	Sequences = 40
	Steps     = 250
)

// logUniform returns an integer in [lo, hi], uniform in its logarithm, so
// that small and huge values are both common.
func logUniform(rng *rand.Rand, lo, hi int64) int64 {
	v := int64(math.Exp(math.Log(float64(lo)) + rng.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	return min(max(v, lo), hi)
}

// Scale is the span over which alg's state changes: its window or
// period, or the longest of a calendar's periods.
func Scale(alg algorithms.Algorithm) time.Duration {
	if algo.FamilyOf(alg.Kind()) == algo.FamilyCalendar {
		return algo.QuotaOf(alg).Window
	}
	return algo.ScopeOf(alg).Window
}

// Zones are the time zones the calendar window's sequences draw from.
var Zones = func() []*time.Location {
	var zs []*time.Location
	for _, name := range []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
		"America/Santiago", "Asia/Kolkata"} {
		loc, err := time.LoadLocation(name)
		if err != nil {
			panic("difftest: " + err.Error())
		}
		zs = append(zs, loc)
	}
	return zs
}()

// Limits is a sequence's algorithm, and a function that draws it again
// with another limit in the same scope.
type Limits struct {
	Alg     algorithms.Algorithm
	Relimit func() algorithms.Algorithm
}

// Scope returns random valid parameters for an algorithm of kind k, and a
// function that draws the same algorithm again with another limit (and
// burst) in the same scope, so that a sequence can change its
// limit while the key holds state. Half the sequences use small parameters,
// a quarter counts up to 10^9 and a quarter counts from 2^40 to 2^50, with
// windows and periods from a microsecond (a millisecond for sub-windows) to
// 30 days.
func Scope(rng *rand.Rand, k *algorithms.Kind) Limits {
	mode := rng.IntN(4)
	if k.String() == "compact_log" {
		// One timestamp per unit: limits up to CompactLogMaxLimit, and
		// costs that write at most a few thousand timestamps at once.
		mode = rng.IntN(3)
	}
	small := mode < 2
	count := func() int64 {
		switch mode {
		case 0, 1:
			return 1 + rng.Int64N(20)
		case 2:
			if k.String() == "compact_log" {
				return logUniform(rng, 1, 5000)
			}
			return logUniform(rng, 1, 1e9)
		}
		// Up to the largest count, 2^50: a log's running total then wraps
		// at 2^52 within a few admissions.
		return logUniform(rng, 1<<40, 1<<50)
	}
	window := func(lo int64) time.Duration {
		if small {
			return time.Duration(lo+rng.Int64N(10_000_000)) * time.Microsecond
		}
		return time.Duration(logUniform(rng, lo, 30*24*3600*1e6)) * time.Microsecond
	}
	p := algorithms.Params{Window: window(1)}
	if algo.FamilyOf(k) == algo.FamilyCalendar {
		// A period in one of the zones whose clock changes are hardest:
		// an hour (Berlin, New York), half an hour (Lord Howe), at
		// midnight (Santiago), or none (UTC, Kolkata).
		p.Window, p.Period = 0, []string{"day", "week", "month"}[rng.IntN(3)]
		p.Location = Zones[rng.IntN(len(Zones))]
	}
	if algo.TakesSubWindows(k) {
		n := logUniform(rng, 1, 1000)
		sub := max(window(1000)/time.Duration(n)/time.Millisecond*time.Millisecond, time.Millisecond)
		p.Window, p.SubWindows = time.Duration(n)*sub, n
	}
	// A limit whose parameters fail validation (a bucket that would take
	// over 2^50µs to refill) is drawn again.
	valid := func() algorithms.Algorithm {
		for {
			q := p
			q.Limit = count()
			if algo.TakesBurst(k) {
				q.Burst = count()
			}
			if alg, err := k.New(q); err == nil {
				return alg
			}
		}
	}
	return Limits{Alg: valid(), Relimit: valid}
}

// Sequence runs one random sequence of Steps decisions and refunds of alg
// (relimit draws it again with another limit) on key, on s and on the Go
// steps, and fails t at the first Result that differs. realTTL says that
// keys expire on the target's own clock while the sequence drives a fake
// one, so the sequence must keep them from expiring early (see Run).
func Sequence(t testing.TB, s store.Store, rng *rand.Rand, lim Limits, key string, realTTL bool) {
	alg, relimit := lim.Alg, lim.Relimit
	t.Helper()
	ctx := context.Background()
	var state algo.State
	// The scale of the sequence's time steps: the window or period.
	scale := Scale(alg)
	fake := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).
		Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
	// Never step fake time back below this, so that real expiry implies the
	// Go state is full too (see below).
	floor := fake
	realPrev := time.Now()
	var expiresReal time.Time // when Redis will drop the key, at the latest
	var fullAt time.Time      // when the key's state no longer counts, in fake time
	type charge struct {
		at   time.Time
		cost int64
	}
	var charges []charge // admissions not yet refunded, newest last
	refunds := 0
	for step := range Steps {
		realNow := time.Now()
		// Fake time advances at least as much as real time did, so a key that
		// Redis expired (TTL >= ResetAfter of real time after the write) is one
		// the Go state also reports as full.
		minGap := realNow.Sub(realPrev).Truncate(time.Microsecond) + time.Microsecond
		realPrev = realNow
		// Equal or backward times only while the key is far from expiring.
		safe := !realTTL || expiresReal.Sub(realNow) > time.Second || expiresReal.IsZero()
		gap := func(upTo time.Duration) time.Duration {
			return time.Duration(rng.Int64N(max(int64(upTo), 1))).Truncate(time.Microsecond)
		}
		switch r := rng.IntN(20); {
		case r == 0 && safe:
			fake = fake.Add(-gap(50 * time.Millisecond)) // a stale clock reading
		case r == 1 && safe:
			fake = fake.Add(-gap(3 * scale)) // whole windows back
		case r == 2 && safe:
			// Same microsecond as the previous step.
		case r == 3:
			fake = maxTime(fake, floor).Add(minGap + gap(3*scale))
		case r < 8:
			fake = maxTime(fake, floor).Add(minGap + gap(scale/10))
		default:
			fake = maxTime(fake, floor).Add(minGap + gap(scale/time.Duration(max(algo.MaxCost(alg), 1))*2))
		}
		if realTTL && !safe {
			// Redis may drop the key before the next call reaches it: move
			// past the time its state stops counting, so that both sides
			// agree it holds nothing.
			fake = maxTime(fake, maxTime(floor, fullAt))
		}
		fake = maxTime(fake, time.Unix(0, 0))
		floor = maxTime(floor, fake)
		if rng.IntN(50) == 0 {
			alg = relimit()
		}
		before := fmt.Sprintf("%+v", state)
		if len(charges) > 0 && rng.IntN(6) == 0 {
			// Refund an admission, most often a recent one.
			i := max(0, len(charges)-1-rng.IntN(min(len(charges), 4)))
			c := charges[i]
			charges = append(charges[:i], charges[i+1:]...)
			n := 1 + rng.Int64N(min(c.cost, algo.MaxCost(alg)))
			if rng.IntN(4) == 0 {
				n = 1 + rng.Int64N(algo.MaxCost(alg)) // more than the request took
			}
			var changed bool
			state, changed = algo.Refund(alg, state, fake, c.at, n)
			// The inspection that reports the state writes nothing, not
			// even a rate count it would convert; the state is kept as a
			// decision's is (store.Store.Refund).
			_, want := algo.Decide(alg, state, fake, 0)
			_ = changed
			got, err := s.Refund(ctx, store.Key{Name: key}, alg, fake, c.at, n)
			if err != nil {
				t.Fatalf("%#v step %d: refund: %v", alg, step, err)
			}
			if got != want {
				t.Fatalf("%#v step %d at %s, refund of %d charged at %s:\n  got %+v\n  go  %+v\n  go state before %s",
					alg, step, fake.Format(time.RFC3339Nano), n, c.at.Format(time.RFC3339Nano), got, want, before)
			}
			expiresReal, fullAt = time.Now().Add(kept(want, fake)), fake.Add(kept(want, fake))
			refunds++
			continue
		}
		cost := rng.Int64N(algo.MaxCost(alg) + 1)
		switch rng.IntN(6) {
		case 0, 1:
			cost = rng.Int64N(min(algo.MaxCost(alg), 3) + 1)
		case 2:
			cost = -1 - rng.Int64N(algo.MaxCost(alg)) // an inspection as a request of that cost
		}

		var want algorithms.Result
		state, want = algo.Decide(alg, state, fake, cost)
		got, err := s.Decide(ctx, store.Key{Name: key}, alg, fake, cost)
		if err != nil {
			t.Fatalf("%#v step %d: %v", alg, step, err)
		}
		if got != want {
			t.Fatalf(
				"%#v step %d at %s, cost %d:\n  got %+v\n  go  %+v\n  go state before %s",
				alg,
				step,
				fake.Format(time.RFC3339Nano),
				cost,
				got,
				want,
				before,
			)
		}
		// The key lives at least ResetAfter of real time from now, and
		// until its At, whether this decision wrote it (an admission, a
		// denial of a larger cost, any decision that converted a rate
		// count) or not.
		expiresReal = time.Now().Add(kept(want, fake))
		fullAt = fake.Add(kept(want, fake))
		if cost > 0 && want.Allowed {
			charges = append(charges, charge{want.At, cost})
		}
	}
	if refunds == 0 && len(charges) > 3 {
		t.Fatalf("%#v: no refund ran", alg)
	}
}

// kept is how long after now a store keeps the state a decision at now
// left: while it counts, and until the decision's At (store.Store).
func kept(res algorithms.Result, now time.Time) time.Duration {
	return max(res.ResetAfter, res.At.Sub(now))
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Run runs n sequences of each of kinds on s, each kind a subtest named
// after it, with keys under prefix: 40 sequences make 10,000 steps per
// algorithm. A kind's sequences are the same whatever the other kinds.
func Run(t *testing.T, s store.Store, kinds []*algorithms.Kind, n int, prefix string, realTTL bool) {
	for _, k := range kinds {
		i := slices.Index(algorithms.Kinds(), k)
		t.Run(k.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 42))
			for seq := range n {
				Sequence(t, s, rng, Scope(rng, k), fmt.Sprintf("%s:%d:%d", prefix, seq, rng.Uint64()), realTTL)
			}
		})
	}
}
