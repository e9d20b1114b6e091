// Command peers runs ratewise and the libraries users would pick instead in
// one run, on the same throwaway Redis and machine, with the same quota
// (1,000 per minute per key), and prints what each costs and the ratio of
// each ratewise row against each other row of its group:
//
//   - GCRA on Redis: ratewise as configured by default (coalescing and the
//     deny cache), without the deny cache, with neither, and on a client
//     that never resends, vs
//     go-redis/redis_rate, redis_rate over go-redis's auto-pipeliner, and
//     throttled (CAS);
//   - fixed window on Redis: ratewise vs ulule/limiter;
//   - the exact sliding log on Redis: the compact log vs the sorted set;
//   - a set of two limits on Redis (a Stack) vs one limit;
//   - in memory: ratewise's token bucket, GCRA, fixed window and sliding
//     logs vs x/time/rate (one limiter per key in a sharded map) and
//     sethvargo/go-limiter's memorystore.
//
// Then, for the GCRA limiters on Redis, one hot key about half denied:
// each at half the decisions per second it made on a hot key that admitted
// all of them.
//
// This is its own module, so the peers never enter ratewise's go.mod.
//
//	cd bench/peers && go run . [-quick] [-only GROUP] [-callers N]
//
// With -postgres, it runs the PostgreSQL comparison instead (postgres.go);
// with -retries D, what retry safety costs Redis, D per row (retries.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	golimiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/goredisstore.v9"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
	"golang.org/x/time/rate"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// only, when set, keeps the groups whose name contains it (-only).
var only string

// halfProfile, when set, is where halfDenied writes a CPU profile of each
// limiter's run: this prefix, then the limiter's name (-halfprofile).
var halfProfile string

const (
	perMinute = 1000
	manyKeys  = 100_000
)

// callers is how many goroutines decide at once (-callers).
var callers = 64

// contender is one limiter under test.
type contender struct {
	group, name string
	ratewise    bool
	// allow decides one request; only an error is counted, not a denial.
	allow func(ctx context.Context, key string) (bool, error)
	// redisKey names the Redis key holding key's state; nil in memory.
	redisKey func(key string) string
	// fresh builds a new in-memory instance, for heap bytes per key.
	fresh func() func(ctx context.Context, key string) (bool, error)
	// atRate builds the same limiter at perSecond, with a burst of a
	// hundredth of a second's, for the run on a hot key about half denied;
	// nil for none.
	atRate func(perSecond int64) (func(ctx context.Context, key string) (bool, error), error)
}

type result struct {
	perSecHot, perSecMany float64
	deniedHot             float64 // share of the hot key's decisions denied
	p99Hot, p99Many       time.Duration
	errors                int64
	redisBytes            float64 // per key
	commands, trips       float64 // per decision
	serverMicros          float64 // Redis's own time per decision
	heapBytes             float64 // per key
	// The hot key about half denied (atRate): the rate it was given, and
	// what it made.
	halfRate               int64
	perSecHalf, deniedHalf float64
	p99Half                time.Duration
	serverMicrosHalf       float64
}

func main() {
	quick := flag.Bool("quick", false, "shorter runs")
	pg := flag.Bool(
		"postgres",
		false,
		"compare ratewise's PostgreSQL store with the hand-written PostgreSQL limiter and ratewise on Redis instead",
	)
	flag.IntVar(&pgConns, "pgconns", 0, "with -postgres, the PostgreSQL pool's size; 0 for pgxpool's default")
	flag.StringVar(&only, "only", "", "run only the groups whose name contains this, such as \"in memory\"")
	flag.IntVar(&callers, "callers", callers, "how many goroutines decide at once")
	flag.StringVar(
		&halfProfile,
		"halfprofile",
		"",
		"write a CPU profile of each limiter's run on the hot key about half denied to this prefix + its name",
	)
	retries := flag.Duration("retries", 0, "measure what retry safety costs Redis, each row for this long, instead")
	maxmemory := flag.Int64("maxmemory", 0, "with -retries, Redis's maxmemory in bytes, with allkeys-lru")
	flag.Parse()
	runner := run
	if *pg {
		runner = runPostgres
	}
	if *retries > 0 {
		runner = func(bool) error { return runRetries(*retries, *maxmemory) }
	}
	if err := runner(*quick); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(2)
	}
}

func run(quick bool) error {
	d := 2 * time.Second
	if quick {
		d = 400 * time.Millisecond
	}
	srv, err := redistest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 2 * callers})
	trips := redistest.CountRoundTrips(rdb)
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()

	contenders, err := build(rdb)
	if err != nil {
		return err
	}
	if only != "" {
		var kept []contender
		for _, c := range contenders {
			if strings.Contains(c.group, only) {
				kept = append(kept, c)
			}
		}
		contenders = kept
	}
	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("user:", i)
	}

	info, _ := admin.Info(ctx, "server").Result()
	fmt.Printf(
		"Redis %s, %d cores, %d callers, %v per cell, quota %d per minute per key; `cd bench/peers && go run . %s`\n\n",
		redisinfo.Field(info, "redis_version"),
		runtime.NumCPU(),
		callers,
		d,
		perMinute,
		strings.Join(os.Args[1:], " "),
	)
	results := map[string]result{}
	for _, c := range contenders {
		var r result
		if err := admin.FlushAll(ctx).Err(); err != nil {
			return err
		}
		if c.redisKey != nil {
			admin.ConfigResetStat(ctx)
		}
		before := trips.Load()
		var decisions int64
		decide := func(key string) (bool, error) { return c.allow(ctx, key) }
		hot := loadgen.Drive(callers, keys[:1], d, decide)
		n, e := hot.Decisions, hot.Errors
		r.p99Hot = hot.P99
		r.perSecHot, r.errors, decisions = float64(n)/d.Seconds(), e, n
		r.deniedHot = float64(hot.Denied) / float64(max(n, 1))
		many := loadgen.Drive(callers, keys, d, decide)
		n, e, r.p99Many = many.Decisions, many.Errors, many.P99
		r.perSecMany, r.errors, decisions = float64(n)/d.Seconds(), r.errors+e, decisions+n
		if c.redisKey != nil {
			r.trips = float64(trips.Load()-before) / float64(decisions)
			calls, usec := commands(ctx, admin)
			r.commands = float64(calls) / float64(decisions)
			r.serverMicros = float64(usec) / float64(decisions)
			r.redisBytes = keyBytes(ctx, admin, c, keys)
		}
		if c.fresh != nil {
			r.heapBytes = heapPerKey(c.fresh, keys)
		}
		if c.atRate != nil {
			if err := halfDenied(ctx, admin, c, d, &r); err != nil {
				return err
			}
		}
		results[c.name] = r
	}
	printTables(contenders, results)
	printHalfDenied(contenders, results)
	return nil
}

// halfDenied measures c on a hot key with about half its requests denied:
// it first finds how many decisions per second c makes on a hot key that
// admits them all, then runs it at half that rate, each limiter at a rate
// of its own, so that each denies about half whatever its speed.
func halfDenied(ctx context.Context, admin *redis.Client, c contender, d time.Duration, r *result) error {
	all, err := c.atRate(100_000_000)
	if err != nil {
		return err
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		return err
	}
	probe := loadgen.Drive(
		callers,
		[]string{"half:probe"},
		d/2,
		func(key string) (bool, error) { return all(ctx, key) },
	)
	r.halfRate = max(int64(float64(probe.Decisions)/(d/2).Seconds()/2), 1)
	half, err := c.atRate(r.halfRate)
	if err != nil {
		return err
	}
	admin.FlushAll(ctx)
	admin.ConfigResetStat(ctx)
	stop, err := startProfile(halfProfile, c.name)
	if err != nil {
		return err
	}
	run := loadgen.Drive(callers, []string{"half:hot"}, d, func(key string) (bool, error) { return half(ctx, key) })
	stop()
	r.perSecHalf = float64(run.Decisions) / d.Seconds()
	r.deniedHalf = float64(run.Denied) / float64(max(run.Decisions, 1))
	r.p99Half = run.P99
	r.errors += run.Errors
	_, usec := commands(ctx, admin)
	r.serverMicrosHalf = float64(usec) / float64(max(run.Decisions, 1))
	return nil
}

// startProfile starts a CPU profile written to prefix + name, spaces and
// commas made dashes, and returns what stops it; with no prefix it does
// nothing.
func startProfile(prefix, name string) (stop func(), err error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(prefix + strings.NewReplacer(" ", "-", ",", "").Replace(name) + ".prof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func build(rdb *redis.Client) ([]contender, error) {
	var cs []contender
	// GCRA on Redis.
	rwGCRA, err := ratewise.New(
		storeredis.New(rdb),
		algorithms.GCRA{Rate: algorithms.PerMinute(perMinute), Burst: perMinute},
	)
	if err != nil {
		return nil, err
	}
	rwKey := func(alg algorithms.Algorithm) func(string) string {
		s := storeredis.New(rdb)
		return func(k string) string { return s.Key(k, alg) }
	}
	gcraAt := func(opts ...storeredis.Option) func(int64) (func(context.Context, string) (bool, error), error) {
		return func(perSecond int64) (func(context.Context, string) (bool, error), error) {
			l, err := ratewise.New(
				storeredis.New(rdb, opts...),
				algorithms.GCRA{Rate: algorithms.PerSecond(perSecond), Burst: max(perSecond/100, 1)},
			)
			if err != nil {
				return nil, err
			}
			return allowOf(l), nil
		}
	}
	cs = append(cs, contender{group: "GCRA on Redis", name: "ratewise GCRA", ratewise: true,
		allow: allowOf(rwGCRA), redisKey: rwKey(rwGCRA.Algorithm()), atRate: gcraAt()})
	// The same without the deny cache (coalescing only), and with neither:
	// what each adds.
	for _, v := range []struct {
		name string
		opts []storeredis.Option
	}{
		{"ratewise GCRA, no deny cache", []storeredis.Option{storeredis.WithDenyCache(0)}},
		{"ratewise GCRA, neither", []storeredis.Option{storeredis.WithDenyCache(0), storeredis.WithCoalescing(0)}},
	} {
		l, err := ratewise.New(storeredis.New(rdb, v.opts...), rwGCRA.Algorithm())
		if err != nil {
			return nil, err
		}
		cs = append(cs, contender{group: "GCRA on Redis", name: v.name, ratewise: true,
			allow: allowOf(l), redisKey: rwKey(rwGCRA.Algorithm()), atRate: gcraAt(v.opts...)})
	}
	// The same on a client that never resends (MaxRetries: -1): no
	// writers' records, and no gate that keeps a key to one script call in
	// flight (docs/redis.md, "Retries and request IDs").
	once := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, PoolSize: 2 * callers, MaxRetries: -1})
	onceAt := func(perSecond int64) (func(context.Context, string) (bool, error), error) {
		l, err := ratewise.New(
			storeredis.New(once),
			algorithms.GCRA{Rate: algorithms.PerSecond(perSecond), Burst: max(perSecond/100, 1)},
		)
		if err != nil {
			return nil, err
		}
		return allowOf(l), nil
	}
	onceGCRA, err := ratewise.New(storeredis.New(once), rwGCRA.Algorithm())
	if err != nil {
		return nil, err
	}
	cs = append(cs, contender{group: "GCRA on Redis", name: "ratewise GCRA, MaxRetries -1", ratewise: true,
		allow: allowOf(onceGCRA), redisKey: rwKey(rwGCRA.Algorithm()), atRate: onceAt})
	rr := redis_rate.NewLimiter(rdb)
	rrLimit := redis_rate.Limit{Rate: perMinute, Burst: perMinute, Period: time.Minute}
	rrAt := func(rr *redis_rate.Limiter) func(int64) (func(context.Context, string) (bool, error), error) {
		return func(perSecond int64) (func(context.Context, string) (bool, error), error) {
			limit := redis_rate.Limit{Rate: int(perSecond), Burst: int(max(perSecond/100, 1)), Period: time.Second}
			return func(ctx context.Context, key string) (bool, error) {
				res, err := rr.Allow(ctx, key, limit)
				if err != nil {
					return false, err
				}
				return res.Allowed > 0, nil
			}, nil
		}
	}
	cs = append(cs, contender{group: "GCRA on Redis", name: "redis_rate",
		allow: func(ctx context.Context, key string) (bool, error) {
			res, err := rr.Allow(ctx, key, rrLimit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		},
		redisKey: func(k string) string { return "rate:" + k }, atRate: rrAt(rr)})
	// redis_rate over go-redis's auto-pipeliner: what pipelining alone gives
	// a limiter of one script call per decision.
	ap, err := rdb.AutoPipeline()
	if err != nil {
		return nil, err
	}
	rrPiped := redis_rate.NewLimiter(ap)
	cs = append(cs, contender{group: "GCRA on Redis", name: "redis_rate, auto-pipelined",
		allow: func(ctx context.Context, key string) (bool, error) {
			res, err := rrPiped.Allow(ctx, key, rrLimit)
			if err != nil {
				return false, err
			}
			return res.Allowed > 0, nil
		},
		redisKey: func(k string) string { return "rate:" + k }, atRate: rrAt(rrPiped)})
	tstore, err := goredisstore.NewCtx(rdb, "throttled:")
	if err != nil {
		return nil, err
	}
	tl, err := throttled.NewGCRARateLimiterCtx(
		tstore,
		throttled.RateQuota{MaxRate: throttled.PerMin(perMinute), MaxBurst: perMinute - 1},
	)
	if err != nil {
		return nil, err
	}
	cs = append(cs, contender{group: "GCRA on Redis", name: "throttled",
		allow: func(ctx context.Context, key string) (bool, error) {
			limited, _, err := tl.RateLimitCtx(ctx, key, 1)
			return !limited, err
		},
		redisKey: func(k string) string { return "throttled:" + k }})

	// Fixed window on Redis.
	rwFixed, err := ratewise.New(storeredis.New(rdb), algorithms.FixedWindow{Limit: perMinute, Window: time.Minute})
	if err != nil {
		return nil, err
	}
	cs = append(cs, contender{group: "fixed window on Redis", name: "ratewise fixed window", ratewise: true,
		allow: allowOf(rwFixed), redisKey: rwKey(rwFixed.Algorithm())})
	ustore, err := ulredis.NewStore(rdb)
	if err != nil {
		return nil, err
	}
	ul := ulule.New(ustore, ulule.Rate{Period: time.Minute, Limit: perMinute})
	cs = append(cs, contender{group: "fixed window on Redis", name: "ulule/limiter",
		allow: func(ctx context.Context, key string) (bool, error) {
			c, err := ul.Get(ctx, key)
			return !c.Reached, err
		},
		redisKey: func(k string) string { return ulule.DefaultPrefix + ":" + k }})

	// The exact sliding logs on Redis: the compact log against the sorted
	// set, both ratewise's.
	for _, v := range []struct {
		name string
		alg  algorithms.Algorithm
		main bool
	}{
		{"ratewise compact log", algorithms.CompactLog{Limit: perMinute, Window: time.Minute}, true},
		{"ratewise sorted-set log", algorithms.SlidingLog{Limit: perMinute, Window: time.Minute}, false},
	} {
		l, err := ratewise.New(storeredis.New(rdb), v.alg)
		if err != nil {
			return nil, err
		}
		cs = append(cs, contender{group: "sliding log on Redis", name: v.name, ratewise: v.main,
			allow: allowOf(l), redisKey: rwKey(v.alg)})
	}

	// A set of two limits on Redis beside one: what the second costs.
	one, err := ratewise.New(storeredis.New(rdb), rwGCRA.Algorithm())
	if err != nil {
		return nil, err
	}
	cs = append(cs, contender{group: "sets on Redis", name: "ratewise GCRA, one limit",
		allow: allowOf(one), redisKey: rwKey(rwGCRA.Algorithm())})
	pair := []algorithms.Algorithm{
		rwGCRA.Algorithm(),
		algorithms.GCRA{Rate: algorithms.PerHour(20 * perMinute), Burst: 20 * perMinute},
	}
	set, err := ratewise.NewStack(storeredis.New(rdb), pair)
	if err != nil {
		return nil, err
	}
	cs = append(cs, contender{group: "sets on Redis", name: "ratewise GCRA, a set of two", ratewise: true,
		allow: func(ctx context.Context, key string) (bool, error) {
			res, err := set.Allow(ctx, key)
			return res.Allowed, err
		},
		redisKey: rwKey(pair[0])})

	// Token bucket in memory.
	rwMemory := func() func(ctx context.Context, key string) (bool, error) {
		l, _ := ratewise.New(
			storememory.New(),
			algorithms.TokenBucket{Capacity: perMinute, Refill: algorithms.PerMinute(perMinute)},
		)
		return allowOf(l)
	}
	cs = append(cs, contender{group: "token bucket in memory", name: "ratewise token bucket", ratewise: true,
		allow: rwMemory(), fresh: rwMemory})
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerMinute(perMinute), Burst: perMinute},
		algorithms.FixedWindow{Limit: perMinute, Window: time.Minute},
		algorithms.SlidingLog{Limit: perMinute, Window: time.Minute},
		algorithms.CompactLog{Limit: perMinute, Window: time.Minute},
	} {
		fresh := func() func(ctx context.Context, key string) (bool, error) {
			l, _ := ratewise.New(storememory.New(), alg)
			return allowOf(l)
		}
		cs = append(
			cs,
			contender{group: "token bucket in memory", name: "ratewise " + alg.Kind().String(), ratewise: true,
				allow: fresh(), fresh: fresh},
		)
	}
	xMemory := func() func(ctx context.Context, key string) (bool, error) {
		m := newShardedRate(rate.Every(time.Minute/perMinute), perMinute)
		return func(_ context.Context, key string) (bool, error) { return m.allow(key), nil }
	}
	cs = append(cs, contender{group: "token bucket in memory", name: "x/time/rate (sharded map)",
		allow: xMemory(), fresh: xMemory})
	glMemory := func() func(ctx context.Context, key string) (bool, error) {
		st, err := memorystore.New(&memorystore.Config{Tokens: perMinute, Interval: time.Minute})
		if err != nil {
			panic(err)
		}
		return func(ctx context.Context, key string) (bool, error) {
			_, _, _, ok, err := st.Take(ctx, key)
			return ok, err
		}
	}
	var _ golimiter.Store
	cs = append(cs, contender{group: "token bucket in memory", name: "go-limiter memorystore",
		allow: glMemory(), fresh: glMemory})
	return cs, nil
}

func allowOf(l *ratewise.Limiter) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, key string) (bool, error) {
		res, err := l.Allow(ctx, key)
		return res.Allowed, err
	}
}

// shardedRate is what an x/time/rate user writes for per-key limits: one
// rate.Limiter per key in a map, split over 256 mutex-guarded shards. It
// never evicts, as is typical.
type shardedRate struct {
	seed   maphash.Seed
	limit  rate.Limit
	burst  int
	shards [256]struct {
		sync.Mutex
		m map[string]*rate.Limiter
	}
}

func newShardedRate(l rate.Limit, burst int) *shardedRate {
	s := &shardedRate{seed: maphash.MakeSeed(), limit: l, burst: burst}
	for i := range s.shards {
		s.shards[i].m = map[string]*rate.Limiter{}
	}
	return s
}

func (s *shardedRate) allow(key string) bool {
	sh := &s.shards[maphash.String(s.seed, key)%256]
	sh.Lock()
	l, ok := sh.m[key]
	if !ok {
		l = rate.NewLimiter(s.limit, s.burst)
		sh.m[key] = l
	}
	sh.Unlock()
	return l.Allow()
}

// commands returns every command Redis ran since RESETSTAT, scripts' inner
// commands included, less the harness's own, and the µs Redis spent in the
// top-level ones (a script's time includes its inner commands).
func commands(ctx context.Context, c *redis.Client) (calls, usec int64) {
	calls, usec, _ = redisinfo.Totals(ctx, c)
	return calls, usec
}

// keyBytes is the mean MEMORY USAGE of 100 keys, each after one decision.
func keyBytes(ctx context.Context, admin *redis.Client, c contender, keys []string) float64 {
	admin.FlushAll(ctx)
	var sum, n float64
	for _, k := range keys[:100] {
		c.allow(ctx, "bytes:"+k)
		if u, err := admin.MemoryUsage(ctx, c.redisKey("bytes:"+k), 0).Result(); err == nil {
			sum += float64(u)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// heapPerKey is the heap a fresh instance holds per key after one decision
// on each of 100,000 keys.
func heapPerKey(fresh func() func(context.Context, string) (bool, error), keys []string) float64 {
	before := heap()
	allow := fresh()
	for _, k := range keys {
		allow(context.Background(), k)
	}
	after := heap()
	runtime.KeepAlive(allow)
	return float64(after-before) / float64(len(keys))
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func printTables(cs []contender, rs map[string]result) {
	fmt.Println(
		"| group | limiter | decisions/s, hot key | denied, hot key | decisions/s, 100,000 keys | " +
			"p99, hot key | p99, 100,000 keys | errors | Redis B/key | Redis commands/decision | " +
			"Redis µs/decision | round trips/decision | heap B/key |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, c := range cs {
		r := rs[c.name]
		fmt.Printf(
			"| %s | %s | %.0f | %.0f%% | %.0f | %v | %v | %d | %s | %s | %s | %s | %s |\n",
			c.group,
			c.name,
			r.perSecHot,
			100*r.deniedHot,
			r.perSecMany,
			r.p99Hot,
			r.p99Many,
			r.errors,
			opt(
				r.redisBytes,
				"%.0f",
			),
			opt(r.commands, "%.2f"),
			opt(r.serverMicros, "%.1f"),
			opt(r.trips, "%.3f"),
			opt(r.heapBytes, "%.0f"),
		)
	}
	fmt.Println()
	fmt.Println(
		"Ratios, ratewise ÷ other (decisions/s: above 1 is better for ratewise; " +
			"latency, bytes, commands and Redis time: below 1 is better):",
	)
	fmt.Println()
	fmt.Println(
		"| group | ratewise | other | decisions/s, hot | decisions/s, 100k keys | p99, hot | p99, 100k keys | " +
			"Redis B/key | commands/decision | Redis µs/decision | heap B/key |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, rwc := range cs {
		if !rwc.ratewise {
			continue
		}
		rw := rs[rwc.name]
		for _, c := range cs {
			if c.ratewise || c.group != rwc.group {
				continue
			}
			p := rs[c.name]
			fmt.Printf(
				"| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				c.group,
				rwc.name,
				c.name,
				ratio(rw.perSecHot, p.perSecHot),
				ratio(rw.perSecMany, p.perSecMany),
				ratio(float64(rw.p99Hot), float64(p.p99Hot)),
				ratio(float64(rw.p99Many), float64(p.p99Many)),
				ratio(
					rw.redisBytes,
					p.redisBytes,
				),
				ratio(rw.commands, p.commands),
				ratio(rw.serverMicros, p.serverMicros),
				ratio(rw.heapBytes, p.heapBytes),
			)
		}
	}
}

// printHalfDenied prints the runs on a hot key about half denied, and
// each ratewise row's ratios against the others.
func printHalfDenied(cs []contender, rs map[string]result) {
	fmt.Println()
	fmt.Println(
		"One hot key, about half denied: each limiter at half the decisions per second it made on a hot key " +
			"that admitted all, with a burst of a hundredth of a second's:",
	)
	fmt.Println()
	fmt.Println("| limiter | rate given, /s | decisions/s | denied | p99 | Redis µs/decision |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, c := range cs {
		if c.atRate == nil {
			continue
		}
		r := rs[c.name]
		fmt.Printf(
			"| %s | %d | %.0f | %.0f%% | %v | %.1f |\n",
			c.name,
			r.halfRate,
			r.perSecHalf,
			100*r.deniedHalf,
			r.p99Half,
			r.serverMicrosHalf,
		)
	}
	fmt.Println()
	fmt.Println("| ratewise | other | decisions/s | p99 | Redis µs/decision |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, rwc := range cs {
		if !rwc.ratewise || rwc.atRate == nil {
			continue
		}
		rw := rs[rwc.name]
		for _, c := range cs {
			if c.ratewise || c.atRate == nil {
				continue
			}
			p := rs[c.name]
			fmt.Printf("| %s | %s | %s | %s | %s |\n", rwc.name, c.name, ratio(rw.perSecHalf, p.perSecHalf),
				ratio(float64(rw.p99Half), float64(p.p99Half)), ratio(rw.serverMicrosHalf, p.serverMicrosHalf))
		}
	}
}

func opt(v float64, format string) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}
