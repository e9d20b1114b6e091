package storepostgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/difftest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storepostgres"
)

// TestBatchDecidesAsAlone sends batches of 1 to 40 decisions on 3 keys,
// in no order of keys, with inspections, stale times and limits that change
// within a batch, through each kind's batch function (as the coalescer
// sends queued decisions), and requires each Result to be what the memory
// store's Go step gives the same decisions made one by one in the batch's
// order for each key.
func TestBatchDecidesAsAlone(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	ctx := context.Background()
	for i, k := range kinds(t) {
		t.Run(k.Name(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			ms := storememory.New()
			alg, relimit := difftest.Scope(rng, k)
			algs := []algorithms.Algorithm{alg, relimit()}
			clock := difftest.NewClock(rng)
			prefix := fmt.Sprintf("%s:%d", testKey(t), rng.Uint64())
			for batch := range sequences(40) {
				var bs []storepostgres.Batch
				for range 1 + rng.IntN(40) {
					a := algs[rng.IntN(len(algs))]
					cost := rng.Int64N(algo.MaxCost(a) + 1)
					if rng.IntN(4) == 0 {
						cost = rng.Int64N(min(algo.MaxCost(a), 3) + 1)
					}
					bs = append(bs, storepostgres.Batch{Key: fmt.Sprint(prefix, ":", rng.IntN(3)), Alg: a,
						Now: clock.Step(rng, max(algo.ScopeOf(a).Window/time.Duration(max(algo.MaxCost(a), 1))*4, time.Microsecond)), Cost: cost})
				}
				got, err := s.SendBatch(ctx, bs)
				if err != nil {
					t.Fatalf("batch %d: %v", batch, err)
				}
				for j, b := range bs {
					want, err := ms.Decide(ctx, store.Key{Name: b.Key}, b.Alg, b.Now, b.Cost)
					if err != nil {
						t.Fatal(err)
					}
					if got[j] != want {
						t.Fatalf("batch %d, decision %d of %d (%s on %s at %s, cost %d):\n  got %+v\n  go  %+v",
							batch, j, len(bs), b.Alg, b.Key, b.Now.Format(time.RFC3339Nano), b.Cost, got[j], want)
					}
				}
			}
		})
	}
}
