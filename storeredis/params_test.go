package storeredis

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// TestLimitsBuiltOnTheFly: limits built on the fly (here 100 distinct
// bursts) are all decided with their own parameters.
func TestLimitsBuiltOnTheFly(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
	t.Cleanup(func() { c.Close() })
	s := New(c, WithClientTime())
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for burst := int64(1); burst <= 100; burst++ {
		alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: burst}
		for range 2 {
			res, err := s.Decide(context.Background(), store.Key{Name: "k"}, alg, now, 0)
			if err != nil || res.Limit != burst || res.Remaining != burst {
				t.Fatalf("burst %d: %+v, %v; want Remaining %d", burst, res, err, burst)
			}
		}
	}
}
