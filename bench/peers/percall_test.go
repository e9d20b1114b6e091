package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storememory"
)

// BenchmarkMemory times one in-memory decision of ratewise's O(1)
// algorithms beside x/time/rate (one limiter per key in a sharded map) and
// go-limiter's memorystore, side by side in one run:
//
//   - keys=1/goroutines=1: one hot key, one goroutine;
//   - keys=100000/goroutines=2: 100,000 keys, two goroutines, each taking
//     the keys in turn;
//   - keys=1/goroutines=64: one hot key, 64 goroutines.
//
// quota=admit is 10^6 per second with a burst of 10^9, which no run
// reaches, so every decision admits; quota=1000/min is the peers' quota, so a hot key is
// mostly denied.
//
//	cd bench/peers && go test -run XXX -bench Memory -benchtime 1s -count 3
func BenchmarkMemory(b *testing.B) {
	type limiter = func(key string) bool
	quotas := []struct {
		name   string
		n      int // per period
		burst  int
		period time.Duration
	}{
		{"admit", 1_000_000, 1_000_000_000, time.Second},
		{"1000/min", perMinute, perMinute, time.Minute},
	}
	for _, q := range quotas {
		per := algorithms.Rate{Count: int64(q.n), Period: q.period}
		contenders := []struct {
			name string
			make func() limiter
		}{
			{"ratewise-gcra", func() limiter { return ratewiseAllow(algorithms.GCRA{Rate: per, Burst: int64(q.burst)}) }},
			{"ratewise-token-bucket", func() limiter {
				return ratewiseAllow(algorithms.TokenBucket{Capacity: int64(q.burst), Refill: per})
			}},
			{"ratewise-fixed-window", func() limiter {
				return ratewiseAllow(algorithms.FixedWindow{Limit: int64(q.burst), Window: q.period})
			}},
			{"x-time-rate", func() limiter {
				m := newShardedRate(rate.Limit(float64(q.n)/q.period.Seconds()), q.burst)
				return m.allow
			}},
			{"go-limiter", func() limiter {
				st, err := memorystore.New(&memorystore.Config{Tokens: uint64(q.burst), Interval: q.period})
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				return func(key string) bool {
					_, _, _, ok, _ := st.Take(ctx, key)
					return ok
				}
			}},
		}
		for _, shape := range []struct{ keys, goroutines int }{{1, 1}, {manyKeys, 2}, {1, 64}} {
			keys := make([]string, shape.keys)
			for i := range keys {
				keys[i] = "user:" + strconv.Itoa(i)
			}
			for _, c := range contenders {
				name := fmt.Sprintf("quota=%s/keys=%d/goroutines=%d/%s", q.name, shape.keys, shape.goroutines, c.name)
				b.Run(name, func(b *testing.B) {
					allow := c.make()
					var cursor atomic.Int64
					b.ReportAllocs()
					b.SetParallelism(max(1, shape.goroutines/runtime.GOMAXPROCS(0)))
					if shape.goroutines == 1 {
						i := 0
						for b.Loop() {
							allow(keys[i%len(keys)])
							i++
						}
						return
					}
					b.RunParallel(func(pb *testing.PB) {
						i := int(cursor.Add(7919))
						for pb.Next() {
							allow(keys[i%len(keys)])
							i++
						}
					})
				})
			}
		}
	}
}

func ratewiseAllow(alg algorithms.Algorithm) func(string) bool {
	l, err := ratewise.New(storememory.New(), alg)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	return func(key string) bool {
		res, _ := l.Allow(ctx, key)
		return res.Allowed
	}
}
