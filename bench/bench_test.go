// Package bench measures every ratewise algorithm on every store. It holds
// benchmarks only; nothing here is asserted against time.
//
//	go test -run XXX -bench . ./bench/
//
// Names read alg=gcra/store=redis/keys=100000/mode=parallel. The Redis
// benchmarks start their own redis-server (standalone, and a 3-master
// cluster) on free loopback ports.
package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// benchAlgorithms are every algorithm at 1,000 per minute (10 sub-windows
// where an algorithm takes them): a hot key spends most of a run at its
// limit, 100,000 keys mostly below it.
var benchAlgorithms = redisinfo.Algorithms(1000, time.Minute, 10)

const manyKeys = 100_000

// keyNames are built once so the loop measures decisions, not fmt.
var keyNames = func() []string {
	k := make([]string, manyKeys)
	for i := range k {
		k[i] = fmt.Sprintf("user:%d", i)
	}
	return k
}()

// target is a store under benchmark, with what it can report about Redis.
type target struct {
	name  string
	store store.Store
	// redis is every node, for INFO and MEMORY USAGE; nil for memory.
	redis      []*redis.Client
	roundTrips *redistest.RoundTrips
	keyOf      func(key string, alg algorithms.Algorithm) string
}

func targets(b *testing.B) []target {
	ts := []target{{name: "memory", store: storememory.New()}}
	// Without redis-server the memory benchmarks still run (under CI=true,
	// Missing fails the run instead).
	if redistest.Missing(b) {
		return ts
	}

	sa := redistest.Standalone(b).Addr
	c := redis.NewClient(&redis.Options{Addr: sa, PoolSize: 128})
	trips := redistest.CountRoundTrips(c)
	b.Cleanup(func() { c.Close() })
	node := redis.NewClient(&redis.Options{Addr: sa})
	b.Cleanup(func() { node.Close() })
	s := storeredis.New(c)
	ts = append(ts, target{name: "redis", store: s, redis: []*redis.Client{node}, roundTrips: trips, keyOf: s.Key})

	cl := redistest.SharedCluster(b)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: 128})
	ctrips := redistest.CountRoundTrips(cc)
	b.Cleanup(func() { cc.Close() })
	var nodes []*redis.Client
	for _, a := range cl.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: a})
		b.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	cs := storeredis.New(cc)
	ts = append(ts, target{name: "cluster", store: cs, redis: nodes, roundTrips: ctrips, keyOf: cs.Key})
	return ts
}

func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	for _, tg := range targets(b) {
		for _, alg := range benchAlgorithms {
			for _, keys := range []int{1, manyKeys} {
				for _, mode := range []string{"serial", "parallel"} {
					name := fmt.Sprintf("alg=%s/store=%s/keys=%d/mode=%s", alg.Kind().String(), tg.name, keys, mode)
					b.Run(name, func(b *testing.B) {
						st, prefix := tg.store, ""
						if tg.redis == nil {
							st = storememory.New() // fresh, so earlier runs leave nothing
						} else {
							prefix = fmt.Sprintf("%d:", time.Now().UnixNano()) // Redis outlives runs
						}
						l, err := ratewise.New(st, alg, ratewise.WithNamespace(strings.TrimSuffix(prefix, ":")))
						if err != nil {
							b.Fatal(err)
						}
						// Goroutines take key indices in chunks of 256 from one
						// cursor, so indices are unique until they wrap and the
						// cursor costs one atomic add per 256 decisions; each
						// marks the keys it touched in its own slice.
						const chunk = 256
						var mu sync.Mutex
						var marks [][]bool
						var cursor atomic.Int64
						worker := func() (next func() string, done func()) {
							used := make([]bool, keys)
							var i, end int64
							next = func() string {
								if i == end {
									end = cursor.Add(chunk)
									i = end - chunk
								}
								k := int(i % int64(keys))
								i++
								used[k] = true
								return keyNames[k]
							}
							done = func() {
								mu.Lock()
								marks = append(marks, used)
								mu.Unlock()
							}
							return next, done
						}
						before := tg.startStats(b)
						b.ReportAllocs()
						b.ResetTimer()
						if mode == "serial" {
							next, done := worker()
							for b.Loop() {
								if _, err := l.Allow(ctx, next()); err != nil {
									b.Fatal(err)
								}
							}
							done()
						} else {
							b.RunParallel(func(pb *testing.PB) {
								next, done := worker()
								defer done()
								for pb.Next() {
									if _, err := l.Allow(ctx, next()); err != nil {
										b.Error(err)
										return
									}
								}
							})
						}
						b.StopTimer()
						n := b.N
						// The key cardinality the name promises.
						distinct := 0
						for k := range keys {
							for _, used := range marks {
								if used[k] {
									distinct++
									break
								}
							}
						}
						// Serially the indices run 0, 1, 2, ...; in parallel each
						// goroutine may leave the end of its last chunk unused.
						want := min(n, keys)
						if mode == "parallel" && n > keys {
							want -= runtime.GOMAXPROCS(0) * chunk
						}
						if distinct < want {
							b.Fatalf("touched %d distinct keys in %d decisions, want at least %d", distinct, n, want)
						}
						var sample []string // up to 100 keys this run touched
						for k := 0; k < keys && len(sample) < 100; k++ {
							for _, used := range marks {
								if used[k] {
									sample = append(sample, keyNames[k])
									break
								}
							}
						}
						tg.report(b, before, n, prefix, alg, sample)
					})
				}
			}
		}
	}
}

// stats are counters read before a run.
type stats struct{ trips int64 }

func (tg target) startStats(b *testing.B) stats {
	if tg.redis == nil {
		return stats{}
	}
	for _, n := range tg.redis {
		if err := n.ConfigResetStat(context.Background()).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return stats{trips: tg.roundTrips.Load()}
}

// report adds Redis round trips, commands and bytes per key to the result.
// Bytes per key is the mean MEMORY USAGE of the sampled keys that still
// exist; keys whose state already expired are not counted.
func (tg target) report(b *testing.B, before stats, n int, prefix string, alg algorithms.Algorithm, sample []string) {
	if tg.redis == nil {
		return
	}
	ctx := context.Background()
	b.ReportMetric(float64(tg.roundTrips.Load()-before.trips)/float64(n), "roundtrips/op")
	var commands int64
	for _, node := range tg.redis {
		commands += scriptCommands(ctx, b, node)
	}
	b.ReportMetric(float64(commands)/float64(n), "rediscmds/op")
	var bytes, sampled int64
	for _, k := range sample {
		rk := tg.keyOf(prefix+k, alg)
		for _, node := range tg.redis {
			if u, err := node.MemoryUsage(ctx, rk, 0).Result(); err == nil {
				bytes += u
				sampled++
				break
			}
		}
	}
	if sampled > 0 {
		b.ReportMetric(float64(bytes)/float64(sampled), "redisB/key")
	}
}

// scriptCommands returns the commands run inside scripts since the last
// CONFIG RESETSTAT: every call but EVALSHA/EVAL and the harness's own.
func scriptCommands(ctx context.Context, b *testing.B, c *redis.Client) int64 {
	stats, err := redisinfo.CommandStats(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for name, st := range stats {
		if name != "evalsha" && name != "eval" && !redisinfo.Harness(name) {
			total += st.Calls
		}
	}
	return total
}

// BenchmarkMemoryStoreHeapPerKey measures the heap the memory store holds per
// idle key: 100,000 keys each decided once, on a clock that does not move so
// that nothing expires, then a GC.
func BenchmarkMemoryStoreHeapPerKey(b *testing.B) {
	for _, alg := range benchAlgorithms {
		b.Run("alg="+alg.Kind().String(), func(b *testing.B) {
			clock := fixedClock{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
			var perKey float64
			for b.Loop() {
				s := storememory.New()
				l, _ := ratewise.New(s, alg, ratewise.WithClock(clock))
				keys := make([]string, manyKeys) // the caller's keys, kept out of the count
				for i := range keys {
					keys[i] = fmt.Sprintf("user:%d", i)
				}
				before := heapInUse()
				for _, k := range keys {
					l.Allow(context.Background(), k)
				}
				after := heapInUse()
				if got := s.Len(); got != manyKeys {
					b.Fatalf("the store holds %d keys, want %d", got, manyKeys)
				}
				perKey = float64(after-before) / manyKeys
				runtime.KeepAlive(keys)
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perKey, "heapB/key")
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// fixedClock and stepClock take no lock, unlike ratewisetest.Clock, so that
// the benchmarks measure the store and not a clock's mutex.
type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// BenchmarkLargestCost times one decision of the largest cost a sliding log
// allows, its whole limit of 10^9, beside a cost of 1, and a sliding window
// counter whose window is split into 10,000 sub-windows of 1ms, all in use,
// beside one split into 10. Each decision writes at most one record and
// reads O(log n) of them, so the four take about the same time: no cost or
// sub-window count lets one call block Redis.
func BenchmarkLargestCost(b *testing.B) {
	ctx := context.Background()
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	stores := []struct {
		name string
		new  func() store.Store
	}{{"memory", func() store.Store { return storememory.New() }}}
	if !redistest.Missing(b) {
		c := redis.NewClient(&redis.Options{Addr: redistest.Standalone(b).Addr})
		b.Cleanup(func() { c.Close() })
		s := storeredis.New(c, storeredis.WithClientTime())
		stores = append(stores, struct {
			name string
			new  func() store.Store
		}{"redis", func() store.Store { return s }})
	}
	for _, st := range stores {
		for _, tc := range []struct {
			name  string
			alg   algorithms.Algorithm
			cost  int64
			every time.Duration // the clock's step between decisions
		}{
			// A window apart, each request of the whole limit is admitted.
			{"alg=sliding_log/cost=1", algorithms.SlidingLog{Limit: 1e9, Window: time.Second}, 1, time.Second},
			{"alg=sliding_log/cost=1000000000", algorithms.SlidingLog{Limit: 1e9, Window: time.Second}, 1e9, time.Second},
			// 1ms apart, every sub-window holds one record.
			{"alg=sliding_window/subwindows=10",
				algorithms.SlidingWindow{Limit: 1e9, Window: 10 * time.Second, SubWindows: 10}, 1, time.Millisecond},
			{"alg=sliding_window/subwindows=10000",
				algorithms.SlidingWindow{Limit: 1e9, Window: 10 * time.Second, SubWindows: 10_000}, 1, time.Millisecond},
		} {
			b.Run(tc.name+"/store="+st.name, func(b *testing.B) {
				clock := &stepClock{now: start}
				l, err := ratewise.New(
					st.new(),
					tc.alg,
					ratewise.WithClock(clock),
					ratewise.WithNamespace(fmt.Sprint(time.Now().UnixNano())),
				)
				if err != nil {
					b.Fatal(err)
				}
				// Run the key in first: the sliding window counter then has
				// every sub-window in use; a request of the log's whole limit
				// a window apart leaves one record, as a request of cost 1
				// does.
				for range 10_000 {
					if _, err := l.AllowN(ctx, "k", tc.cost); err != nil {
						b.Fatal(err)
					}
					clock.now = clock.now.Add(tc.every)
				}
				b.ReportAllocs()
				for b.Loop() {
					res, err := l.AllowN(ctx, "k", tc.cost)
					if err != nil || !res.Allowed {
						b.Fatalf("%+v, %v", res, err)
					}
					clock.now = clock.now.Add(tc.every)
				}
			})
		}
	}
}

type stepClock struct{ now time.Time }

func (c *stepClock) Now() time.Time { return c.now }
