package storeredis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// scriptTargets are the servers the differential tests run scripts on: real
// Redis, the authority, and miniredis, which runs the same scripts in its
// own Lua interpreter (see sequencesOn).
var scriptTargets = map[string]func(t *testing.T) redis.Scripter{
	"redis":     func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) },
	"miniredis": func(t *testing.T) redis.Scripter { return newClient(t, miniredis.RunT(t).Addr()) },
}

// sequencesOn returns how many of a differential test's n sequences run on
// the named target: all of them on real servers and the memory store, and a
// quarter on miniredis, whose interpreter runs several times slower under
// the race detector. A quarter is enough to show that the scripts decide
// there as on Redis; Redis itself holds them to the Go steps on every
// sequence. go test -short runs a quarter of that.
func sequencesOn(target string, n int) int {
	if target == "miniredis" {
		n /= 4
	}
	if testing.Short() {
		n /= 4
	}
	return n
}

// TestDifferentialSets runs the same random sequences of decisions over
// sets of 1 to 4 limits of different kinds and scopes through the memory
// store (the Go steps) and the Redis set script, and requires identical
// Results. Times move forward at least as fast as real time, with stale
// readings of up to 50ms, which keys outlive in client-time mode.
func TestDifferentialSets(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			rs := storeredis.New(client(t), storeredis.WithClientTime())
			run := time.Now().UnixNano() // the server outlives a run under -count
			ms := storememory.New()
			rng := rand.New(rand.NewPCG(3, 4))
			ctx := context.Background()
			for seq := range sequencesOn(name, 30) {
				algs := randomSet(rng)
				key := fmt.Sprintf("%s:%d:%d", testKey(t), run, seq)
				clock := newSteppingClock(rng)
				maxCost := algo.MaxCost(algs[0])
				for _, a := range algs {
					maxCost = min(maxCost, algo.MaxCost(a))
				}
				for step := range 150 {
					now := clock.step(rng, 2*time.Second)
					cost := rng.Int64N(maxCost + 1)
					want, werr := ms.DecideSet(ctx, store.Key{Name: key}, algs, now, cost)
					got, gerr := rs.DecideSet(ctx, store.Key{Name: key}, algs, now, cost)
					if werr != nil || gerr != nil {
						t.Fatalf("set %v step %d: memory %v, redis %v", algs, step, werr, gerr)
					}
					for i := range algs {
						if got[i] != want[i] {
							t.Fatalf("set %v step %d at %s, cost %d, limit %d (%s):\n  lua %+v\n  go  %+v", algs, step, now.Format(time.RFC3339Nano), cost, i, algs[i], got[i], want[i])
						}
					}
				}
			}
		})
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
			if algo.TakesBurst(k) {
				p.Burst = 1 + rng.Int64N(8)
			}
			if algo.TakesSubWindows(k) {
				p.SubWindows = 1 + rng.Int64N(5)
				p.Window = p.Window / time.Duration(p.SubWindows) / time.Millisecond * time.Millisecond * time.Duration(p.SubWindows)
			}
			if alg, err := k.New(p); err == nil {
				algs = append(algs, alg)
				break
			}
		}
	}
	return algs
}

// TestDifferentialReservations runs random bookings, decisions and
// cancellations (refunds of earlier bookings, under the limit each was
// booked under), with random longest waits, costs, stale readings and
// limits that change back and forth, on the algorithms that book ahead,
// through the memory store (the Go step) and the Redis reservation and
// refund scripts, and requires identical Results and delays.
func TestDifferentialReservations(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			rs := storeredis.New(client(t), storeredis.WithClientTime())
			ms := storememory.New()
			run := time.Now().UnixNano()
			rng := rand.New(rand.NewPCG(5, 6))
			ctx := context.Background()
			for seq := range sequencesOn(name, 40) {
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
				key := fmt.Sprintf("%s:%d:%d", testKey(t), run, seq)
				clock := newSteppingClock(rng)
				type booking struct {
					alg algorithms.Algorithm
					res algorithms.Result
				}
				var booked []booking // bookings not yet cancelled
				var history []string // what happened, for a failure's message
				for step := range 200 {
					now := clock.step(rng, window)
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
						history = append(history, fmt.Sprintf("  refund %d of %s under %s: %+v", n, b.res.At.Format("15:04:05.000000"), b.alg, want))
						if werr != nil || gerr != nil || got != want {
							t.Fatalf("%s step %d at %s, a refund of %d booked at %s:\n  lua %+v (%v)\n  go  %+v (%v)\n%s", b.alg, step, now.Format(time.RFC3339Nano), n, b.res.At.Format(time.RFC3339Nano), got, gerr, want, werr, strings.Join(history, "\n"))
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
						t.Fatalf("%s step %d at %s, cost %d, longest wait %v:\n  lua %+v delay %v (%v)\n  go  %+v delay %v (%v)\n%s", alg, step, now.Format(time.RFC3339Nano), cost, maxWait, got, delay, gerr, want, wantDelay, werr, strings.Join(history, "\n"))
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
							t.Fatalf("%s step %d, a decision after bookings:\n  lua %+v (%v)\n  go  %+v (%v)", alg, step, got, gerr, want, werr)
						}
					}
				}
			}
		})
	}
}

// steppingClock is the differential tests' fake clock. It moves forward at
// least as fast as real time, so that a key Redis expires on its own clock
// is one the Go side also finds expired; now and then it repeats a
// microsecond or steps back up to 50ms, a lagging reading, which keys
// outlive in client-time mode.
type steppingClock struct{ now, floor, realPrev time.Time }

func newSteppingClock(rng *rand.Rand) *steppingClock {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
	return &steppingClock{now: now, floor: now, realPrev: time.Now()}
}

// step moves the clock, forward by up to upTo as a rule, and returns it.
func (c *steppingClock) step(rng *rand.Rand, upTo time.Duration) time.Time {
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
