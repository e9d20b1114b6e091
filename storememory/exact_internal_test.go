package storememory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// TestDecisionsMatchTheAlgorithm drives the store and states the test keeps
// itself through the same random decisions, inspections, refunds and
// bookings, for every algorithm, at a rate whose interval is a whole number
// of microseconds (states pack) and at one whose is not (buckets are boxed),
// with the limit changing under live keys (another tag) and a clock that
// steps back: every Result is the algorithm's own, whichever way the store
// kept the state and whichever lock, if any, it decided under. The keys
// share one shard, so that one key's hot entry is tested against another's
// writes.
func TestDecisionsMatchTheAlgorithm(t *testing.T) {
	ctx := context.Background()
	for _, k := range algorithms.Kinds() {
		for _, tc := range []struct {
			name  string
			limit int64
		}{{"whole", 20}, {"fractional", 7}} {
			t.Run(k.String()+"/"+tc.name, func(t *testing.T) {
				var algs []algorithms.Algorithm // one scope, two limits
				for _, limit := range []int64{tc.limit, 3 * tc.limit} {
					alg, err := algo.Nominal(k, limit, time.Second, 4)
					if err != nil {
						t.Fatal(err)
					}
					algs = append(algs, alg)
				}
				s := New()
				keys := sameShard(s, 3)
				ref := map[string]algo.State{}
				type charge struct {
					key  string
					res  algorithms.Result
					cost int64
				}
				var charges []charge
				rng := rand.New(rand.NewPCG(1, uint64(len(k.String()))))
				now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
				for step := range 3000 {
					// Mostly forward by up to 40ms, sometimes back by up
					// to 5ms (less than storecheck.ExpiryGrace), sometimes not at all.
					switch r := rng.IntN(10); {
					case r < 6:
						now = now.Add(time.Duration(rng.Int64N(40_000_000)))
					case r < 7:
						now = now.Add(-time.Duration(rng.Int64N(5_000_000)))
					}
					key := keys[rng.IntN(len(keys))]
					if rng.IntN(4) == 0 {
						key = keys[0] // one key hotter than the rest
					}
					alg := algs[0]
					if rng.IntN(8) == 0 {
						alg = algs[1]
					}
					what := fmt.Sprintf("step %d at %v, %s on %q", step, now.Format(time.StampMicro), alg, key)
					switch r := rng.IntN(20); {
					case r < 2: // an inspection
						cost := -rng.Int64N(algo.MaxCost(alg))
						got, err := s.Decide(ctx, store.Key{Name: key}, alg, now, cost)
						// It changes nothing, unless it converts a bucket
						// written under the other limit's rate count.
						st, want := algo.Decide(alg, ref[key], now, cost)
						ref[key] = st
						same(t, what+fmt.Sprintf(", cost %d", cost), got, err, want)
					case r < 4 && len(charges) > 0: // a refund
						i := rng.IntN(len(charges))
						c := charges[i]
						charges = append(charges[:i], charges[i+1:]...)
						if c.key != key || c.res.At.After(now) && rng.IntN(2) == 0 {
							continue
						}
						n := 1 + rng.Int64N(min(c.cost, algo.MaxCost(alg)))
						got, err := s.Refund(ctx, store.Key{Name: key}, alg, now, c.res.At, n)
						if st, ok := algo.Refund(alg, ref[key], now, c.res.At, n); ok {
							ref[key] = st
						}
						_, want := algo.Decide(alg, ref[key], now, 0)
						same(t, what+fmt.Sprintf(", refund %d", n), got, err, want)
					case r < 5: // a booking
						if !algo.Reserves(alg) {
							continue
						}
						maxWait := time.Duration(rng.Int64N(2_000)) * time.Millisecond
						got, delay, err := s.Reserve(ctx, store.Key{Name: key}, alg, now, 1, maxWait)
						st, want, wantDelay := algo.Reserve(alg, ref[key], now, 1, maxWait)
						ref[key] = st
						same(t, what+", booking", got, err, want)
						if delay != wantDelay {
							t.Fatalf("%s, booking: delay %v, want %v", what, delay, wantDelay)
						}
					default: // a request, mostly of cost 1
						cost := int64(1)
						if rng.IntN(4) == 0 {
							cost = 1 + rng.Int64N(algo.MaxCost(alg))
						}
						got, err := s.Decide(ctx, store.Key{Name: key}, alg, now, cost)
						st, want := algo.Decide(alg, ref[key], now, cost)
						ref[key] = st
						same(t, what+fmt.Sprintf(", cost %d", cost), got, err, want)
						if want.Allowed {
							charges = append(charges, charge{key, want, cost})
						}
					}
				}
			})
		}
	}
}

func same(t *testing.T, what string, got algorithms.Result, err error, want algorithms.Result) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !got.At.Equal(want.At) {
		t.Fatalf("%s: At %v, want %v", what, got.At, want.At)
	}
	got.At, want.At = time.Time{}, time.Time{}
	if got != want {
		t.Fatalf("%s: got %+v, want the algorithm's %+v", what, got, want)
	}
}

// sameShard returns n keys that s keeps in one shard.
func sameShard(s *Store, n int) []string {
	var keys []string
	want := s.shard(s.hash("", "k0"))
	for i := 0; len(keys) < n; i++ {
		if k := fmt.Sprint("k", i); s.shard(s.hash("", k)) == want {
			keys = append(keys, k)
		}
	}
	return keys
}
