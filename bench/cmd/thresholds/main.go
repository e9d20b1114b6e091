// Command thresholds measures, on a real Redis, the common quantitative
// claims behind the classic choice of a rate-limiting algorithm, and prints
// markdown tables:
//
//   - memory: QPS × window records in a sliding-log key, measured bytes per
//     record and in total, beside the common estimate of ~100 B per record,
//     and what the sliding window counter, token bucket and GCRA need
//     instead;
//   - latency: sliding-log decision cost, server-side µs and client p50/p99,
//     as the log grows from 1,000 to 864,000 records, against a budget;
//   - throughput: decisions per second for every algorithm at 1, 16 and 64
//     concurrent callers, on one hot key and on 100,000 keys.
//
// It starts its own redis-server on a free loopback port unless -redis names
// one. -quick stays under a minute by measuring the smaller sizes only.
// -check exits 1 when a bound listed in docs/benchmarks.md no longer holds.
// -svg DIR writes the charts that docs/benchmarks.md embeds.
//
//	go run ./bench/cmd/thresholds [-quick] [-check] [-svg docs/img]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redissession"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

type config struct {
	addr  string
	quick bool
	check bool
	svg   string
	docs  string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "redis", "", "address of a Redis to measure (default: start a throwaway redis-server)")
	flag.BoolVar(&cfg.quick, "quick", false, "measure the smaller sizes only, in under a minute")
	flag.BoolVar(&cfg.check, "check", false, "exit 1 if a bound in -docs no longer holds")
	flag.StringVar(&cfg.svg, "svg", "", "write the charts as SVG files into this directory")
	flag.StringVar(&cfg.docs, "docs", "docs/benchmarks.md", "the document whose bounds -check enforces")
	flag.Parse()
	ok, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "thresholds:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// measured holds the values that bounds refer to, by bound name.
type measured map[string]float64

func run(cfg config) (bool, error) {
	var bounds []bound
	if cfg.check {
		var err error
		if bounds, err = readBounds(cfg.docs); err != nil {
			return false, err
		}
	}
	session, err := redissession.Open(cfg.addr, "thresholds", 128)
	if err != nil {
		return false, err
	}
	defer session.Close()
	ctx := context.Background()
	c, trips, prefix := session.Client, session.RoundTrips, session.Prefix

	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return false, err
	}
	mode := "full"
	if cfg.quick {
		mode = "-quick"
	}
	fmt.Printf(
		"Redis %s on %d cores (%s), client and server on one machine; `go run ./bench/cmd/thresholds` (%s run).\n\n",
		redisinfo.Field(info, "redis_version"),
		runtime.NumCPU(),
		cpuModel(),
		mode,
	)

	m := measured{}
	start := time.Now()
	// Per-key sizes depend on the key's length, so they are measured under
	// the default prefix, which only a server of our own may be given.
	keyPrefix := "ratewise:" // the store's default (storeredis.WithKeyPrefix)
	if cfg.addr != "" {
		keyPrefix = prefix
		fmt.Printf("Per-key sizes below include this run's longer prefix %q.\n\n", prefix)
	}
	mem, err := memoryTable(ctx, c, prefix, keyPrefix, cfg.quick, m)
	if err != nil {
		return false, err
	}
	lat, err := latencyTable(
		ctx,
		c,
		prefix,
		cfg.quick,
		m,
		algorithms.SlidingLog{Limit: 2_000_000, Window: 24 * time.Hour},
	)
	if err != nil {
		return false, err
	}
	if _, err := latencyTable(
		ctx, c, prefix, cfg.quick, m, algorithms.CompactLog{Limit: algo.EnvelopeCompactLogMaxLimit, Window: 24 * time.Hour},
	); err != nil {
		return false, err
	}
	if err := throughputTable(ctx, c, prefix, cfg.quick, trips, m); err != nil {
		return false, err
	}
	if err := retryTable(ctx, c, prefix, cfg.quick, m); err != nil {
		return false, err
	}
	fmt.Printf("\nMeasured in %s.\n", time.Since(start).Round(time.Second))

	if cfg.svg != "" {
		if err := writeCharts(cfg.svg, mem, lat); err != nil {
			return false, err
		}
	}
	if !cfg.check {
		return true, nil
	}
	return checkBounds(bounds, m, cfg.quick), nil
}

// ---- memory ----

type scenario struct {
	qps    int64
	window time.Duration
}

func (s scenario) records() int64 { return s.qps * int64(s.window/time.Second) }

var scenarios = []scenario{
	{10, 86_400 * time.Second},
	{100, 60 * time.Second},
	{1_000, 60 * time.Second},
	{10_000, 60 * time.Second},
}

// memoryRow is one scenario's measured bytes, for the table and the chart.
type memoryRow struct {
	scenario
	logBytes, compactBytes, windowBytes, bucketBytes, gcraBytes int64
	measuredLog                                                 bool
}

func memoryTable(
	ctx context.Context,
	c *redis.Client,
	prefix, keyPrefix string,
	quick bool,
	m measured,
) ([]memoryRow, error) {
	// The states alone, on a client that sends each command once: what a
	// client that resends adds, a record in the state's value, the retry
	// table measures.
	opts := *c.Options()
	opts.MaxRetries = -1
	once := redis.NewClient(&opts)
	defer once.Close()
	s := storeredis.New(
		once,
		storeredis.WithClientTime(),
		storeredis.WithKeyPrefix(prefix),
		storeredis.WithWarnings(0, nil),
	)
	ks := storeredis.New(
		once,
		storeredis.WithClientTime(),
		storeredis.WithKeyPrefix(keyPrefix),
		storeredis.WithWarnings(0, nil),
	)
	fmt.Println("## Memory: the common estimate, measured")
	fmt.Println()
	fmt.Println(
		"A sliding-log key filled with QPS × window records at distinct microseconds, against the common estimate " +
			"of ~100 B per record, by which memory grows with QPS × window (10 per second over a day, about " +
			"86 MB per key), and the compact log (`compact_log`, the same decisions from a ring of 8-byte " +
			"timestamps) filled the same way. The other algorithms keep one key whose size does not grow " +
			"with traffic: the sliding window counter with 60 sub-windows all in use, and the token bucket " +
			"and GCRA (QPS per second, burst QPS) after a few requests. Their key is " +
			"`ratewise:<algorithm>:<scope>:{user:1001}`, the scope being the window or period (`1s`, `1m`).",
	)
	fmt.Println()
	fmt.Println(
		"| QPS × window | records | sliding log: measured | per record | common estimate | compact log | per " +
			"record | sliding window (60) | token bucket | GCRA |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	var rows []memoryRow
	for _, sc := range scenarios {
		row := memoryRow{scenario: sc}
		n := sc.records()
		key := fmt.Sprintf("user:1001:%d", n)
		if !quick || n <= 60_000 {
			alg := algorithms.SlidingLog{Limit: n, Window: sc.window}
			if err := redisinfo.FillLog(
				ctx, s, key, alg, redisinfo.Records{To: n, Start: logStart, Spacing: 10 * time.Microsecond},
			); err != nil {
				return nil, err
			}
			b, err := c.MemoryUsage(ctx, s.Key(key, alg), 0).Result()
			if err != nil {
				return nil, err
			}
			row.logBytes, row.measuredLog = b, true
			enc := "listpack"
			if n > 128 {
				enc = "skiplist"
			}
			m[fmt.Sprintf("sliding_log.bytes_per_record.%s.%d", enc, n)] = float64(b) / float64(n)
			_ = s.Reset(ctx, store.Key{Name: key}, alg)

			ring := algorithms.CompactLog{Limit: n, Window: sc.window}
			if err := redisinfo.FillLog(
				ctx, s, key, ring, redisinfo.Records{To: n, Start: logStart, Spacing: 10 * time.Microsecond},
			); err != nil {
				return nil, err
			}
			if row.compactBytes, err = c.MemoryUsage(ctx, s.Key(key, ring), 0).Result(); err != nil {
				return nil, err
			}
			m[fmt.Sprintf("compact_log.bytes_per_record.%d", n)] = float64(row.compactBytes) / float64(n)
			_ = s.Reset(ctx, store.Key{Name: key}, ring)
		}
		var err error
		sub := sc.window / 60
		if row.windowBytes, err = keyBytes(
			ctx, c, ks, algorithms.SlidingWindow{Limit: sc.records(), Window: sc.window, SubWindows: 60},
			traffic{sub, 60, sc.qps * int64(sub/time.Second)},
		); err != nil {
			return nil, err
		}
		if row.bucketBytes, err = keyBytes(
			ctx, c, ks, algorithms.TokenBucket{Capacity: sc.qps, Refill: algorithms.PerSecond(sc.qps)},
			traffic{time.Millisecond, 3, 1},
		); err != nil {
			return nil, err
		}
		if row.gcraBytes, err = keyBytes(
			ctx, c, ks, algorithms.GCRA{Rate: algorithms.PerSecond(sc.qps), Burst: sc.qps},
			traffic{time.Millisecond, 3, 1},
		); err != nil {
			return nil, err
		}
		m["sliding_window_60.bytes_per_key"] = max(m["sliding_window_60.bytes_per_key"], float64(row.windowBytes))
		m["token_bucket.bytes_per_key"] = max(m["token_bucket.bytes_per_key"], float64(row.bucketBytes))
		m["gcra.bytes_per_key"] = max(m["gcra.bytes_per_key"], float64(row.gcraBytes))
		logCell, perCell, compactCell, compactPer := "skipped (-quick)", "–", "skipped (-quick)", "–"
		if row.measuredLog {
			logCell = human(row.logBytes)
			perCell = fmt.Sprintf("%.1f B", float64(row.logBytes)/float64(n))
			compactCell = human(row.compactBytes)
			compactPer = fmt.Sprintf("%.1f B", float64(row.compactBytes)/float64(n))
		}
		fmt.Printf(
			"| %d × %d s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			sc.qps,
			sc.window/time.Second,
			thousands(n),
			logCell,
			perCell,
			human(n*100),
			compactCell,
			compactPer,
			human(row.windowBytes),
			human(row.bucketBytes),
			human(row.gcraBytes),
		)
		rows = append(rows, row)
	}
	fmt.Println()
	return rows, nil
}

// traffic is what keyBytes decides: count requests of cost each, every
// apart.
type traffic struct {
	every time.Duration
	count int
	cost  int64
}

// keyBytes decides tr on a fresh key under alg and returns its MEMORY
// USAGE.
func keyBytes(
	ctx context.Context,
	c *redis.Client,
	s *storeredis.Store,
	alg algorithms.Algorithm,
	tr traffic,
) (int64, error) {
	every, count, cost := tr.every, tr.count, tr.cost
	const key = "user:1001"
	if err := alg.Validate(); err != nil {
		return 0, err
	}
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	_ = s.Reset(ctx, store.Key{Name: key}, alg)
	for i := range count {
		if res, err := s.Decide(
			ctx, store.Key{Name: key}, alg, t0.Add(time.Duration(i)*every), min(cost, algo.MaxCost(alg)),
		); err != nil {
			return 0, err
		} else if !res.Allowed {
			return 0, fmt.Errorf("%s: request %d denied while sizing the key", alg.Kind().String(), i)
		}
	}
	b, err := c.MemoryUsage(ctx, s.Key(key, alg), 0).Result()
	_ = s.Reset(ctx, store.Key{Name: key}, alg)
	return b, err
}

var logStart = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// ---- latency ----

// Budget for one sliding-log decision, stated in docs/benchmarks.md.
const (
	serverBudget = 50 * time.Microsecond
	p99Budget    = time.Millisecond
)

type latencyRow struct {
	n             int64
	serverMicros  float64
	p50, p99      time.Duration
	overBudgetNow bool
}

// latencyTable measures one decision of alg, a log, as its key grows.
func latencyTable(
	ctx context.Context,
	c *redis.Client,
	prefix string,
	quick bool,
	m measured,
	alg algorithms.Algorithm,
) ([]latencyRow, error) {
	sizes := []int64{1_000, 10_000, 100_000, 300_000, 600_000, 864_000}
	if quick {
		sizes = sizes[:3]
	}
	// Server time is the median of the rounds' means: on a machine that
	// client and server share, one round can catch a pause of either.
	const samples, rounds = 2000, 5
	s := storeredis.New(
		c,
		storeredis.WithClientTime(),
		storeredis.WithKeyPrefix(prefix),
		storeredis.WithWarnings(0, nil),
	)
	// One log that grows; each size then takes 2,000 admitted decisions, one
	// caller at a time, so the log is N to N+2,000 records.
	key := "latency"
	fmt.Printf("## Latency: one %s decision as the log grows\n", alg.Kind().String())
	fmt.Println()
	fmt.Printf(
		"Admitted decisions, one caller, %d per size. Server µs is Redis's own time per EVALSHA (INFO "+
			"commandstats), the median of %d rounds of %d; p50/p99 are measured by the client over all of "+
			"them, round trip included. Budget: %v on the server and %v p99 at the client.\n\n",
		samples,
		rounds,
		samples/rounds,
		serverBudget,
		p99Budget,
	)
	fmt.Println("| records N | server µs per decision | client p50 | client p99 | within budget |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	var rows []latencyRow
	var filled int64
	crossed := int64(0)
	for _, n := range sizes {
		if err := redisinfo.FillLog(
			ctx, s, key, alg, redisinfo.Records{From: filled, To: n, Start: logStart, Spacing: 10 * time.Microsecond},
		); err != nil {
			return nil, err
		}
		filled = n
		durations := make([]time.Duration, samples)
		perRound := make([]float64, rounds)
		for r := range rounds {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				return nil, err
			}
			for i := r * samples / rounds; i < (r+1)*samples/rounds; i++ {
				at := logStart.Add(time.Duration(filled+int64(i)) * 10 * time.Microsecond)
				t := time.Now()
				res, err := s.Decide(ctx, store.Key{Name: key}, alg, at, 1)
				durations[i] = time.Since(t)
				if err != nil {
					return nil, err
				}
				if !res.Allowed {
					return nil, fmt.Errorf("latency sample denied at N=%d", n)
				}
			}
			var err error
			if perRound[r], err = scriptMicros(ctx, c); err != nil {
				return nil, err
			}
		}
		filled += samples
		sort.Float64s(perRound)
		usec := perRound[rounds/2]
		sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
		row := latencyRow{n: n, serverMicros: usec, p50: durations[samples/2], p99: durations[samples*99/100]}
		row.overBudgetNow = usec > float64(serverBudget/time.Microsecond) || row.p99 > p99Budget
		if row.overBudgetNow && crossed == 0 {
			crossed = n
		}
		within := "yes"
		if row.overBudgetNow {
			within = "**no**"
		}
		fmt.Printf("| %s | %.1f | %s | %s | %s |\n", thousands(n), usec, round(row.p50), round(row.p99), within)
		m[fmt.Sprintf("%s.server_us.%d", alg.Kind().String(), n)] = usec
		rows = append(rows, row)
	}
	fmt.Println()
	if crossed == 0 {
		fmt.Printf("The budget holds up to %s records.\n\n", thousands(sizes[len(sizes)-1]))
	} else {
		fmt.Printf("The budget is first crossed at %s records.\n\n", thousands(crossed))
	}
	_ = s.Reset(ctx, store.Key{Name: key}, alg)
	return rows, nil
}

// scriptMicros returns Redis's µs per EVALSHA call since the last RESETSTAT.
func scriptMicros(ctx context.Context, c *redis.Client) (float64, error) {
	stats, err := redisinfo.CommandStats(ctx, c)
	if err != nil {
		return 0, err
	}
	st, ok := stats["evalsha"]
	if !ok || st.Calls == 0 {
		return 0, fmt.Errorf("INFO commandstats has no evalsha calls")
	}
	return float64(st.Usec) / float64(st.Calls), nil
}

// ---- throughput ----

var throughputAlgorithms = redisinfo.Algorithms(1000, time.Minute, 10)

func throughputTable(
	ctx context.Context,
	c *redis.Client,
	prefix string,
	quick bool,
	trips *redistest.RoundTrips,
	m measured,
) error {
	d := 2 * time.Second
	if quick {
		d = 300 * time.Millisecond
	}
	// Server time, as in production.
	s := storeredis.New(c, storeredis.WithKeyPrefix(prefix), storeredis.WithWarnings(0, nil))
	keyNames := make([]string, 100_000)
	for i := range keyNames {
		keyNames[i] = fmt.Sprint("user:", i)
	}
	fmt.Println("## Throughput: decisions per second on one Redis")
	fmt.Println()
	fmt.Printf(
		"Each cell runs %v of decisions from that many goroutines, limit 1,000 per minute per key, Redis's clock, "+
			"the store as configured by default: concurrent decisions share round trips, and repeated "+
			"denials are answered from the deny cache. On a hot key most decisions are denied once the limit "+
			"is used up; on 100,000 keys most are admitted.\n\n",
		d,
	)
	var serverTimes []string
	fmt.Println("| algorithm | keys | 1 caller | 16 callers | 64 callers | round trips per decision |")
	fmt.Println("| --- | --- | --- | --- | --- | --- |")
	for _, alg := range throughputAlgorithms {
		for _, keys := range []int{1, 100_000} {
			l, err := ratewise.New(s, alg, ratewise.WithNamespace(fmt.Sprintf("tp.%d", keys)))
			if err != nil {
				return err
			}
			// Load the script first: the one NOSCRIPT + EVAL a fresh Redis
			// needs per script is not a per-decision cost.
			if _, err := l.PeekN(ctx, "warm", 1); err != nil {
				return err
			}
			var cells []string
			var decisions, tripsUsed int64
			for _, callers := range []int{1, 16, 64} {
				before := trips.Load()
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					return err
				}
				cpu, err := redisinfo.CPU(ctx, c)
				if err != nil {
					return err
				}
				r := loadgen.Drive(callers, keyNames[:keys], d, func(key string) (bool, error) {
					res, err := l.Allow(ctx, key)
					return res.Allowed, err
				})
				n, errs := r.Decisions, r.Errors
				if errs > 0 {
					return fmt.Errorf("%s: %d errors at %d callers", alg.Kind().String(), errs, callers)
				}
				decisions += n
				tripsUsed += trips.Load() - before
				if callers == 64 && keys > 1 {
					// Concurrent decisions share round trips (storeredis.WithCoalescing).
					m["round_trips_per_decision.keys_100000.callers_64"] = float64(trips.Load()-before) / float64(n)
					// Redis's own time per decision on the batch path: what
					// bounds the decisions one node makes per second.
					usec, err := serverMicros(ctx, c)
					if err != nil {
						return err
					}
					perDecision := usec / float64(n)
					m[fmt.Sprintf("%s.server_us_per_decision.keys_100000.callers_64", alg.Kind().String())] = perDecision
					// Redis's CPU per decision: unlike commandstats' wall
					// time, it does not grow while Redis waits for a core
					// the load generator holds, so -check can bound it.
					cpuAfter, err := redisinfo.CPU(ctx, c)
					if err != nil {
						return err
					}
					cpuPer := (cpuAfter - cpu) * 1e6 / float64(n)
					m[fmt.Sprintf("%s.redis_cpu_us_per_decision.keys_100000.callers_64", alg.Kind().String())] = cpuPer
					serverTimes = append(
						serverTimes,
						fmt.Sprintf("%s %.1f (CPU %.1f)", alg.Kind().String(), perDecision, cpuPer),
					)
				}
				perSec := float64(n) / d.Seconds()
				cells = append(cells, thousands(int64(perSec)))
				m[fmt.Sprintf("%s.decisions_per_second.keys_%d.callers_%d", alg.Kind().String(), keys, callers)] = perSec
			}
			rt := float64(tripsUsed) / float64(decisions)
			m["round_trips_per_decision"] = max(m["round_trips_per_decision"], rt)
			fmt.Printf(
				"| %s | %s | %s | %s | %s | %.2f |\n",
				alg.Kind().String(),
				thousands(int64(keys)),
				cells[0],
				cells[1],
				cells[2],
				rt,
			)
		}
	}
	fmt.Printf(
		"\nRedis's own time per decision (INFO commandstats, every command but the harness's, over the decisions; "+
			"in brackets Redis's CPU time, user and system, from INFO cpu), 100,000 keys and 64 callers, "+
			"µs: %s.\n",
		strings.Join(serverTimes, ", "),
	)
	return nil
}

// serverMicros returns the µs Redis spent in every command since CONFIG
// RESETSTAT but the harness's own (a script's time includes the commands
// it runs).
func serverMicros(ctx context.Context, c *redis.Client) (float64, error) {
	_, usec, err := redisinfo.Totals(ctx, c)
	return float64(usec), err
}

// ---- helpers ----

func human(b int64) string {
	switch {
	case b >= 10<<20:
		return fmt.Sprintf("%.0f MB", float64(b)/1e6)
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	case b >= 10_000:
		return fmt.Sprintf("%.0f KB", float64(b)/1e3)
	}
	return fmt.Sprintf("%d B", b)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	var out []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func round(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	return redisinfo.Field(strings.ReplaceAll(string(b), "\t", ""), "model name")
}
