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

// Leases runs n random sequences of 200 steps of leases' bookings,
// decisions, refunds of earlier leases (under the limit each was booked
// under) and resets, with random longest waits, costs, stale readings and
// limits that change back and forth, on the algorithms a lease can hold
// (the buckets and the fixed window), through the memory store (the Go
// step) and ls, in client-time mode, with keys under prefix, and requires
// identical Results and delays, and after each reset an identical peek:
// a reset puts the mark back the same way on both. 40 sequences make the
// full run.
func Leases(t *testing.T, ls store.Store, prefix string, n int) {
	ms := storememory.New()
	run := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	var kinds []*algorithms.Kind
	for _, k := range algorithms.Kinds() {
		if f := algo.FamilyOf(k); f != algo.FamilyLog && f != algo.FamilyCalendar {
			kinds = append(kinds, k)
		}
	}
	for seq := range n {
		k := kinds[rng.IntN(len(kinds))]
		window := time.Duration(1+rng.Int64N(3_000_000)) * time.Microsecond
		limits := make([]algorithms.Algorithm, 2)
		for i := range limits {
			for limits[i] == nil {
				p := algorithms.Params{Limit: 1 + rng.Int64N(9), Window: window}
				if algo.TakesBurst(k) {
					p.Burst = 1 + rng.Int64N(9)
				}
				limits[i], _ = k.New(p)
			}
		}
		alg := limits[0]
		key := store.Key{Name: fmt.Sprintf("%s:%d:%d", prefix, run, seq)}
		clock := NewClock(rng)
		type lease struct {
			alg algorithms.Algorithm
			res algorithms.Result
		}
		var leases []lease   // leases not yet given back
		var history []string // what happened, for a failure's message
		fail := func(step int, now time.Time, what string, got, want any, gerr, werr error) {
			t.Helper()
			t.Fatalf(
				"%s step %d at %s, %s:\n  got %+v (%v)\n  go  %+v (%v)\n%s",
				alg,
				step,
				now.Format(time.RFC3339Nano),
				what,
				got,
				gerr,
				want,
				werr,
				strings.Join(history, "\n"),
			)
		}
		for step := range 200 {
			now := clock.Step(rng, window)
			if rng.IntN(12) == 0 {
				alg = limits[rng.IntN(len(limits))]
			}
			history = append(history, fmt.Sprintf("step %d at %s under %s", step, now.Format("15:04:05.000000"), alg))
			switch r := rng.IntN(10); {
			case r == 0:
				werr := ms.Reset(ctx, key, alg)
				gerr := ls.Reset(ctx, key, alg)
				want, _ := ms.Decide(ctx, key, alg, now, 0)
				got, _ := ls.Decide(ctx, key, alg, now, 0)
				history = append(history, fmt.Sprintf("  reset, then peek: %+v", want))
				if werr != nil || gerr != nil || got != want {
					fail(step, now, "a peek after a reset", got, want, gerr, werr)
				}
			case r < 3 && len(leases) > 0:
				i := rng.IntN(len(leases))
				l := leases[i]
				leases = append(leases[:i], leases[i+1:]...)
				n := 1 + rng.Int64N(algo.MaxCost(l.alg))
				want, werr := ms.Refund(ctx, key, l.alg, now, l.res.At, n)
				got, gerr := ls.Refund(ctx, key, l.alg, now, l.res.At, n)
				history = append(
					history,
					fmt.Sprintf("  give back %d of %s under %s: %+v", n, l.res.At.Format("15:04:05.000000"), l.alg, want),
				)
				if werr != nil || gerr != nil || got != want {
					fail(step, now, fmt.Sprintf("a refund of %d", n), got, want, gerr, werr)
				}
			case r < 6:
				want, werr := ms.Decide(ctx, key, alg, now, 1)
				got, gerr := ls.Decide(ctx, key, alg, now, 1)
				history = append(history, fmt.Sprintf("  decide 1: %+v", want))
				if werr != nil || gerr != nil || got != want {
					fail(step, now, "a decision", got, want, gerr, werr)
				}
			default:
				cost := 1 + rng.Int64N(algo.MaxCost(alg))
				maxWait := time.Duration(rng.Int64N(int64(3 * window))).Truncate(time.Microsecond)
				if rng.IntN(4) == 0 {
					maxWait = 0
				}
				want, wantDelay, werr := ms.Lease(ctx, key, alg, now, cost, maxWait)
				got, delay, gerr := ls.Lease(ctx, key, alg, now, cost, maxWait)
				history = append(history, fmt.Sprintf("  lease %d within %v: %+v delay %v", cost, maxWait, want, wantDelay))
				if werr != nil || gerr != nil || got != want || delay != wantDelay {
					fail(
						step,
						now,
						fmt.Sprintf("a lease of %d within %v (delay %v, want %v)", cost, maxWait, delay, wantDelay),
						got,
						want,
						gerr,
						werr,
					)
				}
				if want.Allowed {
					leases = append(leases, lease{alg, want})
				}
			}
		}
	}
}
