package storepostgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
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
		t.Run(k.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i), 7))
			ms := storememory.New()
			lim := difftest.Scope(rng, k)
			algs := []algorithms.Algorithm{lim.Alg, lim.Relimit()}
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
						Now: clock.Step(
							rng,
							max(difftest.Scale(a)/time.Duration(max(algo.MaxCost(a), 1))*4, time.Microsecond),
						), Cost: cost})
				}
				got, errs := s.SendBatch(ctx, bs)
				if err := errors.Join(errs...); err != nil {
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

// TestBatchFailsAlone: a decision that raises an error in a batch fails
// alone, with store.ErrUnavailable and not store.ErrMaybeDecided (the batch
// rolled it back), and every other decision in the batch decides exactly
// as the memory store decides them one by one, the poisoned ones left
// out. The error here comes from a trigger that refuses to write some
// keys, as a failing step would.
func TestBatchFailsAlone(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	s := storepostgres.New(pool, storepostgres.WithClientTime())
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec(`CREATE OR REPLACE FUNCTION public.poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF position('\x706f69736f6e'::bytea IN NEW.key) > 0 THEN -- "poison"
				RAISE EXCEPTION 'poisoned row';
			END IF;
			RETURN NEW;
		END $$`)
	exec(`CREATE TRIGGER poison BEFORE INSERT OR UPDATE ON ratewise.state FOR EACH ROW EXECUTE FUNCTION public.poison()`)
	t.Cleanup(func() { _, _ = pool.Exec(ctx, `DROP TRIGGER poison ON ratewise.state`) })

	alg := algorithms.FixedWindow{Limit: 3, Window: time.Minute}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	prefix := testKey(t) + ":"
	var bs []storepostgres.Batch
	for i, name := range []string{"a", "poison", "b", "a", "poison", "a", "c", "a", "b"} {
		bs = append(
			bs,
			storepostgres.Batch{Key: prefix + name, Alg: alg, Now: now.Add(time.Duration(i) * time.Millisecond), Cost: 1},
		)
	}
	got, errs := s.SendBatch(ctx, bs)
	ms := storememory.New()
	for i, b := range bs {
		if strings.HasSuffix(b.Key, "poison") {
			if !errors.Is(errs[i], store.ErrUnavailable) || errors.Is(errs[i], store.ErrMaybeDecided) {
				t.Fatalf("decision %d, on the poisoned key: %v; want store.ErrUnavailable, and not ErrMaybeDecided", i, errs[i])
			}
			continue
		}
		want, _ := ms.Decide(ctx, store.Key{Name: b.Key}, b.Alg, b.Now, b.Cost)
		if errs[i] != nil || got[i] != want {
			t.Fatalf("decision %d, on %s, beside the poisoned ones: %+v, %v; want %+v", i, b.Key, got[i], errs[i], want)
		}
	}
}
