package storeredis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// TestCompactLogMatchesSlidingLog runs the same random sequences through a
// store as a SlidingLog on one key and a CompactLog on another, with stale
// readings, costs from -limit (inspections) to the limit, limit changes and
// refunds, and requires identical Results: over 10,000 decisions on the
// memory store and on Redis, and a quarter of them on miniredis.
func TestCompactLogMatchesSlidingLog(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(*testing.T) store.Store { return storememory.New() },
	}
	for name, client := range scriptTargets {
		stores[name] = func(t *testing.T) store.Store { return storeredis.New(client(t), storeredis.WithClientTime()) }
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			rf := s
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(31, 32))
			run := time.Now().UnixNano()
			steps := 0
			sequences := sequencesOn(name, 60)
			for seq := range sequences {
				window := time.Duration(1_000+rng.Int64N(3_000_000)) * time.Microsecond
				limits := []int64{1 + rng.Int64N(4), 1 + rng.Int64N(30), 1 + rng.Int64N(300)}
				limit := limits[0]
				logKey, ringKey := fmt.Sprintf(
					"%s:%d:%d:log",
					testKey(t),
					run,
					seq,
				), fmt.Sprintf(
					"%s:%d:%d:ring",
					testKey(t),
					run,
					seq,
				)
				clock := difftest.NewClock(rng)
				var charges []algorithms.Result
				for step := range 200 {
					now := clock.Step(rng, window/time.Duration(limit)+time.Microsecond)
					if rng.IntN(40) == 0 {
						limit = limits[rng.IntN(len(limits))]
					}
					log := algorithms.SlidingLog{Limit: limit, Window: window}
					ring := algorithms.CompactLog{Limit: limit, Window: window}
					if len(charges) > 0 && rng.IntN(8) == 0 {
						i := rng.IntN(len(charges))
						c := charges[i]
						charges = append(charges[:i], charges[i+1:]...)
						n := 1 + rng.Int64N(limit)
						want, werr := rf.Refund(ctx, store.Key{Name: logKey}, log, now, c.At, n)
						got, gerr := rf.Refund(ctx, store.Key{Name: ringKey}, ring, now, c.At, n)
						if werr != nil || gerr != nil || got != want {
							t.Fatalf(
								"sequence %d step %d, a refund of %d: compact %+v (%v), log %+v (%v)",
								seq,
								step,
								n,
								got,
								gerr,
								want,
								werr,
							)
						}
						continue
					}
					cost := 1 + rng.Int64N(min(limit, 3))
					if rng.IntN(3) == 0 {
						cost = rng.Int64N(limit+1) - rng.Int64N(2)*limit
					}
					want, werr := s.Decide(ctx, store.Key{Name: logKey}, log, now, cost)
					got, gerr := s.Decide(ctx, store.Key{Name: ringKey}, ring, now, cost)
					// The same decision; what each charged names its own kind.
					if werr != nil || gerr != nil || decision(got) != decision(want) {
						t.Fatalf(
							"sequence %d step %d, %s cost %d: compact %+v (%v), log %+v (%v)",
							seq,
							step,
							ring,
							cost,
							got,
							gerr,
							want,
							werr,
						)
					}
					if want.Allowed && cost > 0 {
						charges = append(charges, want)
					}
					steps++
				}
			}
			if steps < sequences*10_000/60 {
				t.Fatalf("only %d steps", steps)
			}
		})
	}
}

// decision returns r without what it charged (Result.Charged), which names
// the algorithm, to compare two algorithms' decisions.
func decision(r algorithms.Result) algorithms.Result {
	return algorithms.Result{
		Allowed:    r.Allowed,
		Limit:      r.Limit,
		Remaining:  r.Remaining,
		RetryAfter: r.RetryAfter,
		ResetAfter: r.ResetAfter,
		At:         r.At,
	}
}
