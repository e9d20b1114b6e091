package difftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// Sets runs n random sequences of 150 decisions over sets of 1 to 4
// limits of different kinds and scopes through the memory store (the Go
// steps) and rs, in client-time mode, with keys under prefix, and requires
// identical Results. Times move forward at least as fast as real time,
// with stale readings of up to 50ms, which keys outlive in client-time
// mode. 30 sequences make the full run.
func Sets(t *testing.T, rs store.Store, prefix string, n int) {
	run := time.Now().UnixNano() // a server outlives a run under -count
	ms := storememory.New()
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	for seq := range n {
		algs := randomSet(rng)
		key := fmt.Sprintf("%s:%d:%d", prefix, run, seq)
		clock := NewClock(rng)
		maxCost := algo.MaxCost(algs[0])
		for _, a := range algs {
			maxCost = min(maxCost, algo.MaxCost(a))
		}
		for step := range 150 {
			now := clock.Step(rng, 2*time.Second)
			cost := rng.Int64N(maxCost + 1)
			want, werr := ms.DecideSet(ctx, store.Key{Name: key}, algs, now, cost)
			got, gerr := rs.DecideSet(ctx, store.Key{Name: key}, algs, now, cost)
			if werr != nil || gerr != nil {
				t.Fatalf("set %v step %d: memory %v, store %v", algs, step, werr, gerr)
			}
			for i := range algs {
				if got[i] != want[i] {
					t.Fatalf(
						"set %v step %d at %s, cost %d, limit %d (%s):\n  got %+v\n  go  %+v",
						algs,
						step,
						now.Format(time.RFC3339Nano),
						cost,
						i,
						algs[i],
						got[i],
						want[i],
					)
				}
			}
		}
	}
}

// randomSet returns 1 to 4 limits of distinct kinds, with small limits and
// windows from 100ms to 20s, so that sequences cross many windows.
func randomSet(rng *rand.Rand) []algorithms.Algorithm {
	kinds := algorithms.Kinds()
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var algs []algorithms.Algorithm
	for _, k := range kinds[:1+rng.IntN(4)] {
		for {
			window := time.Duration(100+rng.Int64N(20_000)) * time.Millisecond
			p := algorithms.Params{Limit: 1 + rng.Int64N(8), Window: window}
			if algo.FamilyOf(k) == algo.FamilyCalendar {
				p.Window, p.Period, p.Location = 0, "day", Zones[rng.IntN(len(Zones))]
			}
			if algo.TakesBurst(k) {
				p.Burst = 1 + rng.Int64N(8)
			}
			if algo.TakesSubWindows(k) {
				p.SubWindows = 1 + rng.Int64N(5)
				p.Window = p.Window / time.Duration(
					p.SubWindows,
				) / time.Millisecond * time.Millisecond * time.Duration(
					p.SubWindows,
				)
			}
			if alg, err := k.New(p); err == nil {
				algs = append(algs, alg)
				break
			}
		}
	}
	return algs
}

// Reservations runs n random sequences of 200 bookings, decisions and
// cancellations (refunds of earlier bookings, under the limit each was
// booked under), with random longest waits, costs, stale readings and
// limits that change back and forth, on the algorithms that book ahead,
// through the memory store (the Go step) and rs, in client-time mode, with
// keys under prefix, and requires identical Results and delays. 40
// sequences make the full run.
func Reservations(t *testing.T, rs store.Store, prefix string, n int) {
	ms := storememory.New()
	run := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	for seq := range n {
		var k *algorithms.Kind
		for k == nil || !algo.TakesBurst(k) {
			k = algorithms.Kinds()[rng.IntN(len(algorithms.Kinds()))]
		}
		window := time.Duration(1+rng.Int64N(3_000_000)) * time.Microsecond
		limits := make([]algorithms.Algorithm, 2)
		for i := range limits {
			for limits[i] == nil {
				limits[i], _ = k.New(algorithms.Params{Limit: 1 + rng.Int64N(9), Window: window, Burst: 1 + rng.Int64N(9)})
			}
		}
		alg := limits[0]
		key := fmt.Sprintf("%s:%d:%d", prefix, run, seq)
		clock := NewClock(rng)
		type booking struct {
			alg algorithms.Algorithm
			res algorithms.Result
		}
		var booked []booking // bookings not yet cancelled
		var history []string // what happened, for a failure's message
		for step := range 200 {
			now := clock.Step(rng, window)
			if rng.IntN(12) == 0 {
				alg = limits[rng.IntN(len(limits))]
			}
			history = append(history, fmt.Sprintf("step %d at %s under %s", step, now.Format("15:04:05.000000"), alg))
			if len(booked) > 0 && rng.IntN(4) == 0 {
				i := rng.IntN(len(booked))
				b := booked[i]
				booked = append(booked[:i], booked[i+1:]...)
				n := 1 + rng.Int64N(algo.MaxCost(b.alg))
				want, werr := ms.Refund(ctx, store.Key{Name: key}, b.alg, now, b.res.At, n)
				got, gerr := rs.Refund(ctx, store.Key{Name: key}, b.alg, now, b.res.At, n)
				history = append(
					history,
					fmt.Sprintf("  refund %d of %s under %s: %+v", n, b.res.At.Format("15:04:05.000000"), b.alg, want),
				)
				if werr != nil || gerr != nil || got != want {
					t.Fatalf(
						"%s step %d at %s, a refund of %d booked at %s:\n  got %+v (%v)\n  go  %+v (%v)\n%s",
						b.alg,
						step,
						now.Format(time.RFC3339Nano),
						n,
						b.res.At.Format(time.RFC3339Nano),
						got,
						gerr,
						want,
						werr,
						strings.Join(history, "\n"),
					)
				}
				continue
			}
			cost := 1 + rng.Int64N(algo.MaxCost(alg))
			maxWait := time.Duration(rng.Int64N(int64(3 * window))).Truncate(time.Microsecond)
			if rng.IntN(4) == 0 {
				maxWait = 0
			}
			want, wantDelay, werr := ms.Reserve(ctx, store.Key{Name: key}, alg, now, cost, maxWait)
			got, delay, gerr := rs.Reserve(ctx, store.Key{Name: key}, alg, now, cost, maxWait)
			if werr != nil || gerr != nil || got != want || delay != wantDelay {
				t.Fatalf(
					"%s step %d at %s, cost %d, longest wait %v:\n  got %+v delay %v (%v)\n  go  %+v delay %v (%v)\n%s",
					alg,
					step,
					now.Format(time.RFC3339Nano),
					cost,
					maxWait,
					got,
					delay,
					gerr,
					want,
					wantDelay,
					werr,
					strings.Join(history, "\n"),
				)
			}
			history = append(history, fmt.Sprintf("  book %d within %v: %+v delay %v", cost, maxWait, want, wantDelay))
			if want.Allowed {
				booked = append(booked, booking{alg, want})
			}
			if rng.IntN(3) == 0 { // a plain decision between bookings
				want, werr := ms.Decide(ctx, store.Key{Name: key}, alg, now, 1)
				got, gerr := rs.Decide(ctx, store.Key{Name: key}, alg, now, 1)
				history = append(history, fmt.Sprintf("  decide 1: %+v", want))
				if werr != nil || gerr != nil || got != want {
					t.Fatalf(
						"%s step %d, a decision after bookings:\n  got %+v (%v)\n  go  %+v (%v)",
						alg,
						step,
						got,
						gerr,
						want,
						werr,
					)
				}
			}
		}
	}
}

// Clock is the differential tests' fake clock. It moves forward at
// least as fast as real time, so that a key Redis expires on its own clock
// is one the Go side also finds expired; now and then it repeats a
// microsecond or steps back up to 50ms, a lagging reading, which keys
// outlive in client-time mode.
type Clock struct{ now, floor, realPrev time.Time }

// NewClock returns a Clock at a random time.
func NewClock(rng *rand.Rand) *Clock {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).
		Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
	return &Clock{now: now, floor: now, realPrev: time.Now()}
}

// Step moves the clock, forward by up to upTo as a rule, and returns it.
func (c *Clock) Step(rng *rand.Rand, upTo time.Duration) time.Time {
	gap := time.Since(c.realPrev).Truncate(time.Microsecond) + time.Microsecond
	c.realPrev = time.Now()
	switch r := rng.IntN(10); {
	case r == 0:
		c.now = c.now.Add(-time.Duration(rng.Int64N(int64(50 * time.Millisecond))).Truncate(time.Microsecond))
	case r == 1:
		// the same microsecond
	default:
		c.now = maxTime(c.now, c.floor).Add(gap + time.Duration(rng.Int64N(int64(upTo))).Truncate(time.Microsecond))
	}
	c.floor = maxTime(c.floor, c.now)
	return c.now
}
