// Command coalescing measures what sharing round trips between concurrent
// decisions (storeredis.WithCoalescing) does to GCRA on a throwaway Redis,
// side by side in one run: decisions per second, p50 and p99 latency, round
// trips and Redis µs per decision, at several numbers of concurrent callers,
// on one hot key (nearly all denied once its burst is used) and on 100,000
// keys (none denied), for coalescing off and at several thresholds. The deny
// cache is off, so that every decision reaches Redis; -denycache turns it on.
//
//	go run ./bench/cmd/coalescing [-d 1s] [-callers 1,2,4,8,16,64] [-inflight 0,1,2,4]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

func main() {
	d := flag.Duration("d", time.Second, "time per cell")
	callerList := flag.String("callers", "1,2,4,8,16,64", "numbers of concurrent callers, comma-separated")
	inFlight := flag.String("inflight", "0,1,2,4", "WithCoalescing values to compare, comma-separated (0 is off)")
	only := flag.String("keys", "", `"hot" or "many" to measure only one key set`)
	denyCache := flag.Bool("denycache", false, "leave the deny cache on, as by default")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the client to this file")
	flag.Parse()
	if *profile != "" {
		f, err := os.Create(*profile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "coalescing:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	keySets = *only
	if *denyCache {
		denyCacheSize = 4096 // the store's default (storeredis.WithDenyCache)
	}
	callers, err := ints(*callerList)
	if err == nil {
		var modes []int
		if modes, err = ints(*inFlight); err == nil {
			err = run(*d, callers, modes)
		}
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "coalescing:", err)
		os.Exit(2)
	}
}

func ints(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

const manyKeys = 100_000

// keySets is -keys.
var keySets string

// denyCacheSize is the deny cache's size: 0 unless -denycache.
var denyCacheSize int

func run(d time.Duration, callers, modes []int) error {
	srv, err := redistest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2 * slices.Max(callers)})
	defer rdb.Close()
	trips := redistest.CountRoundTrips(rdb)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	info, _ := admin.Info(ctx, "server").Result()
	cache := "off"
	if denyCacheSize > 0 {
		cache = "on"
	}
	fmt.Printf(
		"Redis %s, %d cores, %v per cell, GCRA 1000 per minute burst 1000, deny cache %s; `go run "+
			"./bench/cmd/coalescing`\n\n",
		redisinfo.Field(info, "redis_version"),
		runtime.NumCPU(),
		d,
		cache,
	)

	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	fmt.Println(
		"| keys | callers | coalescing | decisions/s | × off | p50 | p99 | round trips/decision | Redis µs/decision |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot key", keys[:1]}, {"100,000", keys}} {
		if keySets == "hot" && len(set.keys) > 1 || keySets == "many" && len(set.keys) == 1 {
			continue
		}
		for _, n := range callers {
			var off float64
			for _, mode := range modes {
				if err := admin.FlushAll(ctx).Err(); err != nil {
					return err
				}
				admin.ConfigResetStat(ctx)
				l, err := ratewise.New(
					storeredis.New(
						rdb,
						storeredis.WithCoalescing(mode),
						storeredis.WithDenyCache(denyCacheSize),
						storeredis.WithWarnings(0, nil),
					),
					algorithms.GCRA{Rate: algorithms.PerMinute(1000), Burst: 1000},
				)
				if err != nil {
					return err
				}
				before := trips.Load()
				m := loadgen.Drive(n, set.keys, d, allow(ctx, l))
				if m.Errors > 0 {
					return fmt.Errorf("%d errors with %d callers, coalescing %d", m.Errors, n, mode)
				}
				_, usec, err := redisinfo.Totals(ctx, admin)
				if err != nil {
					return err
				}
				perSec := float64(m.Decisions) / d.Seconds()
				if mode == 0 {
					off = perSec
				}
				label := "off"
				if mode > 0 {
					label = fmt.Sprintf("on, %d alone", mode)
				}
				ratio := "–"
				if off > 0 {
					ratio = fmt.Sprintf("%.2f", perSec/off)
				}
				fmt.Printf("| %s | %d | %s | %.0f | %s | %v | %v | %.3f | %.2f |\n", set.name, n, label, perSec, ratio,
					m.P50.Round(time.Microsecond), m.P99.Round(time.Microsecond),
					float64(trips.Load()-before)/float64(m.Decisions), float64(usec)/float64(m.Decisions))
			}
		}
	}
	return overDenial(ctx, rdb)
}

// overDenial measures how much later than Redis the deny cache lets a
// denied key through, on Redis's own clock as in production: a key of one
// request per 20ms is denied through a store with the cache, then polled
// through it and through a store without it, alternately, until each
// admits. The cache counts its RetryAfter from before the request was sent,
// so it should never let through later than Redis.
func overDenial(ctx context.Context, rdb *redis.Client) error {
	const trials = 50
	cached := storeredis.New(rdb, storeredis.WithCoalescing(0), storeredis.WithWarnings(0, nil))
	plain := storeredis.New(
		rdb,
		storeredis.WithCoalescing(0),
		storeredis.WithDenyCache(0),
		storeredis.WithWarnings(0, nil),
	)
	var alg algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerSecond(50), Burst: 1}
	var lags []time.Duration
	for i := range trials {
		key := fmt.Sprint("overdeny:", i)
		for {
			res, err := cached.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
			if err != nil {
				return err
			}
			if !res.Allowed {
				break
			}
		}
		// Polling stops when the cached store is admitted: that admission
		// is Redis's own, so Redis admitted no later.
		var cacheAt, redisAt time.Time
		for cacheAt.IsZero() {
			if redisAt.IsZero() {
				res, err := plain.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 0) // a peek: what a request would get
				if err != nil {
					return err
				}
				if res.Allowed {
					redisAt = time.Now()
				}
			}
			if cacheAt.IsZero() {
				res, err := cached.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
				if err != nil {
					return err
				}
				if res.Allowed {
					cacheAt = time.Now()
				}
			}
		}
		if redisAt.IsZero() {
			redisAt = cacheAt
		}
		lags = append(lags, cacheAt.Sub(redisAt))
	}
	slices.Sort(lags)
	fmt.Println()
	fmt.Printf(
		"Deny cache: when a denied key is let through by a store with the cache, minus when Redis admits it (a "+
			"store without the cache, polled alternately), %d keys of 50 per second, burst 1, on Redis's "+
			"clock: median %v, largest %v. Each poll of the two stores takes about one round trip, which "+
			"bounds what this can resolve.\n",
		trials,
		lags[len(lags)/2].Round(time.Microsecond),
		lags[len(lags)-1].Round(time.Microsecond),
	)
	return nil
}

// allow is l.Allow as loadgen.Drive calls it.
func allow(ctx context.Context, l *ratewise.Limiter) func(string) (bool, error) {
	return func(key string) (bool, error) {
		res, err := l.Allow(ctx, key)
		return res.Allowed, err
	}
}
