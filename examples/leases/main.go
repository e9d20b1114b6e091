// Command leases runs 4 instances of 16 goroutines on one hot key limited
// to 1,000,000 a second, first deciding every request in the store, then
// through lease.Wrap, and prints for each the decisions a second, the
// admissions in each window against the limit, the under-admission, and
// the store's round trips.
//
//	go run ./examples/leases                      # a throwaway redis-server, or memory without one
//	go run ./examples/leases -alg gcra -burst 10000
//
// Leases need the store to decide at the caller's now, so the Redis stores
// are built WithClientTime; the instances share this process's clock.
package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	core "github.com/ratewise/ratewise/internal/lease"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/internal/testkit/roundtrips"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

func main() {
	instances := flag.Int("instances", 4, "instances sharing the store")
	callers := flag.Int("callers", 16, "goroutines per instance")
	rate := flag.Int64("rate", 1_000_000, "the key's limit per second")
	burst := flag.Int64("burst", 10_000, "the burst, for -alg gcra")
	algName := flag.String("alg", "fixed_window", "fixed_window (rate per 1s window) or gcra (rate per second, -burst)")
	d := flag.Duration("d", 3*time.Second, "how long each run lasts")
	addr := flag.String(
		"redis",
		"",
		"a Redis to use (keys go under a prefix of their own); empty: start a throwaway redis-server, or use "+
			"memory without one",
	)
	memory := flag.Bool("memory", false, "use one memory store instead of Redis")
	flag.Parse()

	var alg algorithms.Algorithm = algorithms.FixedWindow{Limit: *rate, Window: time.Second}
	if *algName == "gcra" {
		alg = algorithms.GCRA{Rate: algorithms.PerSecond(*rate), Burst: *burst}
	}
	if err := alg.Validate(); err != nil {
		fail(err)
	}

	newStore := memoryStores()
	where := "one memory store"
	if !*memory {
		if s, desc, stop, err := redisStores(*addr); err == nil {
			defer stop()
			newStore, where = s, desc
		} else {
			fmt.Fprintf(os.Stderr, "leases: no Redis (%v): using one memory store\n", err)
		}
	}
	fmt.Printf("%s; %d instances × %d goroutines on one key, %v, for %v each\n\n", where, *instances, *callers, alg, *d)
	var base float64
	for _, leased := range []bool{false, true} {
		r := run(newStore, alg, *instances, *callers, *d, leased)
		r.print(alg, leased)
		if !leased {
			base = r.perSecond()
		} else {
			fmt.Printf("\nleased / unleased decisions a second: %.1f×\n", r.perSecond()/base)
		}
	}
}

// stores makes one instance's store, and says how many round trips all
// of them have made so far.
type stores struct {
	make  func() store.Store
	trips func() int64
}

func memoryStores() func(string) stores {
	return func(string) stores {
		shared := &counted{Store: storememory.New()}
		return stores{make: func() store.Store { return shared }, trips: shared.calls.Load}
	}
}

// redisStores starts a redis-server unless addr is given, and returns a
// maker of Redis stores, each with its own client, in client time.
func redisStores(addr string) (func(string) stores, string, func(), error) {
	stop, desc := func() {}, "Redis at "+addr
	if addr == "" {
		srv, err := redistest.Start()
		if err != nil {
			return nil, "", nil, err
		}
		addr, stop, desc = srv.Addr, srv.Stop, "a throwaway redis-server"
	}
	return func(prefix string) stores {
		var counters []*roundtrips.Counter
		return stores{
			make: func() store.Store {
				rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32, MaxRetries: -1})
				counters = append(counters, roundtrips.Count(rdb))
				return storeredis.New(
					rdb,
					storeredis.WithClientTime(),
					storeredis.WithKeyPrefix(prefix),
					storeredis.WithWarnings(0, nil),
				)
			},
			trips: func() int64 {
				var n int64
				for _, c := range counters {
					n += c.Load()
				}
				return n
			},
		}
	}, desc, stop, nil
}

// counted counts the calls that reach a memory store: its "round trips".
type counted struct {
	*storememory.Store
	calls atomic.Int64
}

func (c *counted) Decide(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	c.calls.Add(1)
	return c.Store.Decide(ctx, key, alg, now, cost)
}

func (c *counted) Reserve(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	c.calls.Add(1)
	return c.Store.Reserve(ctx, key, alg, now, cost, maxWait)
}

func (c *counted) Refund(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	c.calls.Add(1)
	return c.Store.Refund(ctx, key, alg, now, at, n)
}

// result is what one run measured.
type result struct {
	decisions  int64
	admissions []int64 // each admission's Result.At, µs
	denials    []int64 // each denial's Result.At, µs
	elapsed    time.Duration
	trips      int64
}

func (r result) perSecond() float64 { return float64(r.decisions) / r.elapsed.Seconds() }

// run runs instances × callers goroutines on one key for d, each deciding
// as fast as it can through a Limiter on its instance's store.
func run(
	newStores func(string) stores,
	alg algorithms.Algorithm,
	instances, callers int,
	d time.Duration,
	leased bool,
) result {
	ss := newStores(fmt.Sprintf("leases-demo:%v:%d:", leased, time.Now().UnixNano()))
	var ws []*lease.Store
	var limiters []*ratewise.Limiter
	for range instances {
		var s store.Store = ss.make()
		if leased {
			w, err := lease.Wrap(s, lease.Policy{Instances: instances})
			if err != nil {
				fail(err)
			}
			ws, s = append(ws, w), w
		}
		l, err := ratewise.New(s, alg)
		if err != nil {
			fail(err)
		}
		limiters = append(limiters, l)
	}
	var (
		mu  sync.Mutex
		res result
		wg  sync.WaitGroup
	)
	ctx := context.Background()
	start := time.Now()
	end := start.Add(d)
	for _, l := range limiters {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var n int64
				var ats, dts []int64
				for ; n%64 != 0 || time.Now().Before(end); n++ {
					r, err := l.Allow(ctx, "hot")
					if err != nil {
						fail(err)
					}
					if r.Allowed {
						ats = append(ats, r.At.UnixMicro())
					} else {
						dts = append(dts, r.At.UnixMicro())
					}
				}
				mu.Lock()
				res.decisions += n
				res.admissions = append(res.admissions, ats...)
				res.denials = append(res.denials, dts...)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, w := range ws {
		if err := w.Close(ctx); err != nil {
			fail(err)
		}
	}
	res.trips = ss.trips()
	slices.Sort(res.admissions)
	return res
}

// print reports a run: decisions a second, admissions per window against
// the limit, under-admission, round trips.
func (r result) print(alg algorithms.Algorithm, leased bool) {
	name := "without leases"
	if leased {
		name = "with leases"
	}
	fmt.Printf(
		"%s: %d decisions in %v: %.0f decisions/s; %d admitted; %d store round trips (%.1f decisions each)\n",
		name,
		r.decisions,
		r.elapsed.Round(time.Millisecond),
		r.perSecond(),
		len(r.admissions),
		r.trips,
		float64(r.decisions)/float64(max(r.trips, 1)),
	)
	if len(r.admissions) == 0 {
		return
	}
	p := algo.ParamsOf(alg)
	limit := algo.MaxCost(alg)
	if _, ok := alg.(algorithms.FixedWindow); ok {
		// Per window: admitted against the limit, and under-admission,
		// the requests the window had room for that were denied.
		w := p.Window.Microseconds()
		admitted, denied := map[int64]int64{}, map[int64]int64{}
		for _, at := range r.admissions {
			admitted[at/w]++
		}
		for _, at := range r.denials {
			denied[at/w]++
		}
		over, under := 0, int64(0)
		for _, k := range slices.Sorted(maps.Keys(admitted)) {
			n := admitted[k]
			if n > limit {
				over++
			}
			u := min(limit, n+denied[k]) - n
			under += max(u, 0)
			fmt.Printf(
				"  window %v: %d admitted of a limit of %d, %d denied; under-admission %d\n",
				time.UnixMicro(k*w).UTC().Format("15:04:05"),
				n,
				limit,
				denied[k],
				max(u, 0),
			)
		}
		fmt.Printf(
			"  windows over the limit: %d; under-admission: %d (%.3f%% of admissions)\n",
			over,
			under,
			100*float64(under)/float64(len(r.admissions)),
		)
		return
	}
	// The bucket: every span [a, b] of the admissions by At holds at most
	// Burst + (b-a)/T.
	over := len(core.Excesses(alg, r.admissions))
	span := time.Duration(r.admissions[len(r.admissions)-1]-r.admissions[0]) * time.Microsecond
	most := min(limit+int64(float64(p.Limit)*span.Seconds()/p.Window.Seconds()), int64(len(r.admissions)+len(r.denials)))
	under := most - int64(len(r.admissions))
	fmt.Printf("  admissions over the bucket's bound (Burst + span/T over any span): %d\n", over)
	fmt.Printf(
		"  over %v: %d admitted of at most %d (the bound, or the requests if fewer): under-admission %d (%.3f%%)\n",
		span.Round(time.Millisecond),
		len(r.admissions),
		most,
		under,
		100*float64(under)/float64(max(most, 1)),
	)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "leases:", err)
	os.Exit(1)
}
