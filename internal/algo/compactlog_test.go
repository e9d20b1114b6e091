package algo_test

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// TestCompactLogIsSlidingLog feeds the same random sequences to CompactLog
// and SlidingLog, with stale and repeated times, costs from -limit
// (inspections) to the limit, limits that change while the key holds
// state, and refunds of earlier admissions, and requires identical
// Results.
func TestCompactLogIsSlidingLog(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	steps := 0
	for seq := range 400 {
		window := time.Duration(1+rng.Int64N(5_000_000)) * time.Microsecond
		limits := []int64{1 + rng.Int64N(3), 1 + rng.Int64N(20), 1 + rng.Int64N(200)}
		var logState, ringState algo.State
		clock := t0.Add(time.Duration(rng.Int64N(int64(time.Hour))).Truncate(time.Microsecond))
		type charge struct {
			at   time.Time
			cost int64
		}
		var charges []charge
		limit := limits[0]
		for step := range 300 {
			switch r := rng.IntN(10); {
			case r == 0:
				clock = clock.Add(-time.Duration(rng.Int64N(int64(window))).Truncate(time.Microsecond))
			case r == 1: // the same microsecond
			case r == 2:
				clock = clock.Add(time.Duration(rng.Int64N(int64(3 * window))).Truncate(time.Microsecond))
			default:
				clock = clock.Add(time.Duration(rng.Int64N(int64(window)/max(limit, 1) + 1)).Truncate(time.Microsecond))
			}
			if rng.IntN(40) == 0 {
				limit = limits[rng.IntN(len(limits))]
			}
			log := algorithms.SlidingLog{Limit: limit, Window: window}
			ring := algorithms.CompactLog{Limit: limit, Window: window}
			if len(charges) > 0 && rng.IntN(8) == 0 {
				i := rng.IntN(len(charges))
				c := charges[i]
				charges = append(charges[:i], charges[i+1:]...)
				n := 1 + rng.Int64N(min(c.cost, limit))
				if rng.IntN(4) == 0 {
					n = 1 + rng.Int64N(limit) // more than the request took
				}
				var logChanged, ringChanged bool
				logState, logChanged = algo.Refund(log, logState, clock, c.at, n)
				ringState, ringChanged = algo.Refund(ring, ringState, clock, c.at, n)
				if logChanged != ringChanged {
					t.Fatalf(
						"sequence %d step %d: a refund changed the compact log: %v, the sliding log: %v",
						seq,
						step,
						ringChanged,
						logChanged,
					)
				}
			}
			cost := rng.Int64N(limit+1) - rng.Int64N(2)*limit
			if rng.IntN(2) == 0 {
				cost = 1 + rng.Int64N(min(limit, 3))
			}
			var want, got algorithms.Result
			logState, want = algo.Decide(log, logState, clock, cost)
			ringState, got = algo.Decide(ring, ringState, clock, cost)
			if decision(got) != decision(want) {
				t.Fatalf(
					"sequence %d step %d, %s at %v cost %d:\n  compact %+v\n  log     %+v",
					seq,
					step,
					ring,
					clock.Sub(t0),
					cost,
					got,
					want,
				)
			}
			if want.Allowed && cost > 0 {
				charges = append(charges, charge{want.At, cost})
			}
			steps++
		}
	}
	if steps < 100_000 {
		t.Fatalf("only %d steps", steps)
	}
}

// A compact log in steady use allocates nothing per decision.
func TestCompactLogAllocations(t *testing.T) {
	var alg algorithms.Algorithm = algorithms.CompactLog{Limit: 100, Window: time.Second}
	var st algo.State
	now := t0
	for range 1000 { // grow the ring to its size
		now = now.Add(5 * time.Millisecond)
		st, _ = algo.Decide(alg, st, now, 1)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(5 * time.Millisecond)
		st, _ = algo.Decide(alg, st, now, 1)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per decision", allocs)
	}
	if size := reflect.ValueOf(st).Elem().FieldByName("Ring").Len(); size > 100 {
		t.Fatalf("the ring holds %d timestamps for a limit of 100", size)
	}
}

// Inspecting a key with no state allocates nothing.
func TestCompactLogInspectsWithoutAllocating(t *testing.T) {
	var alg algorithms.Algorithm = algorithms.CompactLog{Limit: 10, Window: time.Second}
	if allocs := testing.AllocsPerRun(100, func() { algo.Decide(alg, nil, t0, 0) }); allocs != 0 {
		t.Fatalf("%v allocations to inspect an empty key", allocs)
	}
}
