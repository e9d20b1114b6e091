package storeredis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/storeredis"
)

// Every go-redis client kind users deploy with fits the store.
var (
	_ redis.Scripter = (*redis.Client)(nil) // standalone and Sentinel (NewFailoverClient)
	_ redis.Scripter = (*redis.ClusterClient)(nil)
	_ redis.Scripter = (*redis.Ring)(nil)
	_ redis.Scripter = redis.UniversalClient(nil)
)

// allAlgorithms is every algorithm of the registry at 5 per minute.
var allAlgorithms = redisinfo.Algorithms(5, time.Minute, 6)

// TestRing runs decisions through a two-shard Ring, the last client kind.
func TestRing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{
		"a": miniredis.RunT(t).Addr(), "b": miniredis.RunT(t).Addr(),
	}})
	t.Cleanup(func() { ring.Close() })
	l, _ := ratewise.New(storeredis.New(ring), algorithms.FixedWindow{Limit: 2, Window: time.Minute})
	for i := range 20 {
		key := fmt.Sprint("user:", i)
		var admitted int
		for range 3 {
			res, err := l.Allow(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				admitted++
			}
		}
		if admitted != 2 {
			t.Fatalf("key %s admitted %d, want 2", key, admitted)
		}
	}
}
