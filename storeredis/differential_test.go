package storeredis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storeredis"
	"github.com/ratewise/ratewise/storeredis/redistest"
)

const (
	sequences        = 20
	stepsPerSequence = 500 // 10,000 steps per algorithm
)

// randomAlgorithm returns valid random parameters for the algorithm named.
func randomAlgorithm(rng *rand.Rand, name string) algorithms.Algorithm {
	micros := func(lo, hi int64) time.Duration { return time.Duration(lo+rng.Int64N(hi-lo+1)) * time.Microsecond }
	limit := 1 + rng.Int64N(20)
	rate := algorithms.Rate{Count: 1 + rng.Int64N(50), Period: micros(1, 5_000_000)}
	switch name {
	case "fixed_window":
		return algorithms.FixedWindow{Limit: limit, Window: micros(1_000, 10_000_000)}
	case "sliding_log":
		return algorithms.SlidingLog{Limit: limit, Window: micros(1_000, 10_000_000)}
	case "sliding_window":
		n := 1 + rng.Int64N(10)
		return algorithms.SlidingWindow{Limit: limit, Window: time.Duration(n) * micros(1_000, 2_000_000), SubWindows: n}
	case "token_bucket":
		return algorithms.TokenBucket{Capacity: limit, Refill: rate}
	case "gcra":
		return algorithms.GCRA{Rate: rate, Burst: limit}
	}
	panic("unknown algorithm " + name)
}

var algorithmNames = []string{"fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"}

// TestDifferential feeds the same random sequences of times (forward, equal
// and backward), costs (0 to inspect, up to the limit) and parameters to the
// Go decision step and to the Lua script, and requires identical Results,
// field by field. No rounding differs: both compute in integer microseconds.
func TestDifferential(t *testing.T) {
	targets := []struct {
		name string
		// realTTL: keys expire on Redis's own clock while the test drives a
		// fake one, so the sequence must keep them from expiring early.
		realTTL bool
		client  func(t *testing.T) redis.Scripter
	}{
		{"redis", true, func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) }},
		{"miniredis", false, func(t *testing.T) redis.Scripter { return newClient(t, miniredis.RunT(t).Addr()) }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			s := storeredis.New(target.client(t), storeredis.WithClientTime())
			for i, name := range algorithmNames {
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(i), 42))
					for seq := range sequences {
						differential(t, s, rng, randomAlgorithm(rng, name), fmt.Sprintf("%s:%d:%d", testKey(t), seq, rng.Uint64()), target.realTTL)
					}
				})
			}
		})
	}
}

func differential(t *testing.T, s *storeredis.Store, rng *rand.Rand, alg algorithms.Algorithm, key string, realTTL bool) {
	t.Helper()
	ctx := context.Background()
	var state algorithms.State
	fake := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
	// Never step fake time back below this, so that real expiry implies the
	// Go state is full too (see below).
	floor := fake
	realPrev := time.Now()
	var expiresReal time.Time // when Redis will drop the key, at the latest
	for step := range stepsPerSequence {
		realNow := time.Now()
		// Fake time advances at least as much as real time did, so a key that
		// Redis expired (TTL >= ResetAfter of real time after the write) is one
		// the Go state also reports as full.
		minGap := realNow.Sub(realPrev).Truncate(time.Microsecond) + time.Microsecond
		realPrev = realNow
		// Equal or backward times only while the key is far from expiring.
		safe := !realTTL || expiresReal.Sub(realNow) > 200*time.Millisecond || expiresReal.IsZero()
		switch r := rng.IntN(20); {
		case r == 0 && safe:
			fake = fake.Add(-time.Duration(rng.Int64N(int64(5 * time.Second)))).Truncate(time.Microsecond)
		case r == 1 && safe:
			// Same microsecond as the previous step.
		case r == 2:
			fake = maxTime(fake, floor).Add(minGap + time.Duration(rng.Int64N(int64(20*time.Second)))).Truncate(time.Microsecond)
		default:
			fake = maxTime(fake, floor).Add(minGap + time.Duration(rng.Int64N(int64(time.Second)))).Truncate(time.Microsecond)
		}
		if realTTL && !safe {
			fake = maxTime(fake, floor)
		}
		floor = maxTime(floor, fake)
		cost := rng.Int64N(alg.MaxCost() + 1)

		var want algorithms.Result
		state, want = alg.Decide(state, fake, cost)
		got, err := s.Decide(ctx, key, alg, fake, cost)
		if err != nil {
			t.Fatalf("%#v step %d: %v", alg, step, err)
		}
		if got != want {
			t.Fatalf("%#v step %d at %s, cost %d:\n  lua %+v\n  go  %+v", alg, step, fake.Format(time.RFC3339Nano), cost, got, want)
		}
		if want.Allowed && cost > 0 {
			expiresReal = time.Now().Add(want.ResetAfter)
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
