package storeredis_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/difftest"
	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDifferentialSetBatches sends random batches of sets' decisions, as
// concurrent DecideSet calls are coalesced (difftest.SetBatches: several
// subjects, lists of kinds and changed limits interleaved in each batch),
// and requires each set's Results to be what the Go steps give when the
// batch's sets are decided one after another in order: on Redis, on
// miniredis, and on the cluster, where a batch spans hash slots.
func TestDifferentialSetBatches(t *testing.T) {
	targets := map[string]func(t *testing.T) redis.Scripter{
		"redis":     scriptTargets["redis"],
		"miniredis": scriptTargets["miniredis"],
		"cluster": func(t *testing.T) redis.Scripter {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for name, client := range targets {
		t.Run(name, func(t *testing.T) {
			s := storeredis.New(client(t), storeredis.WithClientTime())
			batcher := func(ctx context.Context, batch []difftest.SetDecision) ([][]algorithms.Result, []error) {
				sets := make([]storeredis.BatchSet, len(batch))
				for i, d := range batch {
					sets[i] = storeredis.BatchSet{Key: d.Key, Algs: d.Algs, Now: d.Now, Cost: d.Cost}
				}
				return storeredis.DecideSetBatch(ctx, s, sets)
			}
			difftest.SetBatches(t, batcher, testKey(t), sequencesOn(name, 20))
		})
	}
}
