package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
	"github.com/ratewise/ratewise/storeredis"
)

// The PostgreSQL comparison (go run . -postgres): ratewise's PostgreSQL
// store against the token bucket teams write by hand on the database they
// already have (a transaction: SELECT … FOR UPDATE, the step in Go, UPDATE),
// and against ratewise's Redis store, at 1, 16 and 64 callers, on one hot
// key and on 100,000 keys, on throwaway servers on this machine. The quota
// is a token bucket of 1,000,000 per second with a burst of 1,000,000, more
// than any of them decides, so that every decision admits and writes: the
// hot key is where a row lock serialises every caller.
const (
	pgRate  = 1_000_000
	pgBurst = 1_000_000
)

var pgCallers = []int{1, 16, 64}

// baselineSchema is the hand-written limiter's table: tokens and the time
// they were counted at.
const baselineSchema = `CREATE TABLE IF NOT EXISTS buckets ` +
	`(key text PRIMARY KEY, tokens double precision NOT NULL, updated timestamptz NOT NULL)`

// baseline decides one request on key the way teams write it: in a
// transaction, lock the row (creating it full the first time), refill by
// the time since it was counted, take a token if there is one, write back.
// Four round trips (BEGIN, SELECT, UPDATE, COMMIT) with the row locked
// across three.
func baseline(ctx context.Context, pool *pgxpool.Pool, key string) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	var tokens float64
	var updated, now time.Time
	row := "SELECT tokens, updated, clock_timestamp() FROM buckets WHERE key = $1 FOR UPDATE"
	err = tx.QueryRow(ctx, row, key).Scan(&tokens, &updated, &now)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := tx.Exec(
			ctx, "INSERT INTO buckets VALUES ($1, $2, clock_timestamp()) ON CONFLICT DO NOTHING", key, float64(pgBurst),
		); err != nil {
			return false, err
		}
		err = tx.QueryRow(ctx, row, key).Scan(&tokens, &updated, &now)
	}
	if err != nil {
		return false, err
	}
	tokens = min(float64(pgBurst), tokens+now.Sub(updated).Seconds()*pgRate)
	ok := tokens >= 1
	if ok {
		tokens--
	}
	if _, err := tx.Exec(
		ctx, "UPDATE buckets SET tokens = $2, updated = $3 WHERE key = $1", key, tokens, now,
	); err != nil {
		return false, err
	}
	return ok, tx.Commit(ctx)
}

// tripConn counts the writes on a connection: one per round trip, since
// pgx sends each exchange's messages in one write.
type tripConn struct {
	net.Conn
	n *atomic.Int64
}

func (c tripConn) Write(b []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(b)
}

type pgContender struct {
	name  string
	table string // the table whose size per row is the bytes per key, "" for Redis
	allow func(ctx context.Context, key string) (bool, error)
	trips func() int64
	// keep decides once on a key under the same kind with a slow rate,
	// whose state stays while its size is measured.
	keep func(ctx context.Context, key string) (bool, error)
}

type pgCell struct {
	perSec, admitted float64
	p99              time.Duration
	trips            float64
	errors           int64
}

// pgConns is the PostgreSQL pool's size (-pgconns): 0 leaves pgxpool's
// default, the larger of 4 and the number of CPUs. Every limiter shares the
// pool, as an app's limiters would. More connections than the server has
// cores do not make a hot key faster: they queue on its row lock inside
// the server instead of in the pool, where waiting costs nothing.
var pgConns int

func runPostgres(quick bool) error {
	d := 2 * time.Second
	if quick {
		d = 400 * time.Millisecond
	}
	ctx := context.Background()
	srv, err := pgtest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	var pgTrips atomic.Int64
	cfg, err := pgxpool.ParseConfig(srv.URL)
	if err != nil {
		return err
	}
	if pgConns > 0 {
		cfg.MaxConns = int32(pgConns)
	}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return tripConn{c, &pgTrips}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, baselineSchema); err != nil {
		return err
	}
	rsrv, err := redistest.Start()
	if err != nil {
		return err
	}
	defer rsrv.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: rsrv.Addr, PoolSize: 2 * pgCallers[len(pgCallers)-1]})
	defer rdb.Close()
	redisTrips := redistest.CountRoundTrips(rdb)

	tb := algorithms.TokenBucket{Refill: algorithms.PerSecond(pgRate), Capacity: pgBurst}
	gcra := algorithms.GCRA{Rate: algorithms.PerSecond(pgRate), Burst: pgBurst}
	pgStore := storepostgres.New(pool)
	if err := pgStore.Migrate(ctx); err != nil {
		return err
	}
	limiter := func(s store.Store, alg algorithms.Algorithm) (func(context.Context, string) (bool, error), error) {
		l, err := ratewise.New(s, alg)
		if err != nil {
			return nil, err
		}
		return allowOf(l), nil
	}
	pgTB, err := limiter(pgStore, tb)
	if err != nil {
		return err
	}
	pgGCRA, err := limiter(pgStore, gcra)
	if err != nil {
		return err
	}
	// The same with every decision alone in its transaction: what
	// sharing transactions adds.
	pgGCRAAlone, err := limiter(storepostgres.New(pool, storepostgres.WithCoalescing(0)), gcra)
	if err != nil {
		return err
	}
	redisStore := storeredis.New(rdb, storeredis.WithWarnings(0, nil))
	redisGCRA, err := limiter(redisStore, gcra)
	if err != nil {
		return err
	}
	// The same kinds refilling a token every 259s, for the bytes a key
	// holds: a key decided once keeps its state that long.
	month := algorithms.Rate{Count: pgRate, Period: 30 * 24 * time.Hour}
	tbHour := algorithms.TokenBucket{Refill: month, Capacity: pgBurst}
	gcraHour := algorithms.GCRA{Rate: month, Burst: pgBurst}
	pgTBHour, err := limiter(pgStore, tbHour)
	if err != nil {
		return err
	}
	pgGCRAHour, err := limiter(pgStore, gcraHour)
	if err != nil {
		return err
	}
	redisGCRAHour, err := limiter(redisStore, gcraHour)
	if err != nil {
		return err
	}
	hand := func(ctx context.Context, key string) (bool, error) { return baseline(ctx, pool, key) }
	contenders := []pgContender{
		{"hand-written token bucket (SELECT … FOR UPDATE, UPDATE)", "buckets", hand, pgTrips.Load, hand},
		{"ratewise token bucket on PostgreSQL", "ratewise.state", pgTB, pgTrips.Load, pgTBHour},
		{"ratewise GCRA on PostgreSQL", "ratewise.state", pgGCRA, pgTrips.Load, pgGCRAHour},
		{"ratewise GCRA on PostgreSQL, each decision alone", "ratewise.state", pgGCRAAlone, pgTrips.Load, pgGCRAHour},
		{"ratewise GCRA on Redis", "", redisGCRA, redisTrips.Load, redisGCRAHour},
	}

	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("user:", i)
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	fmt.Printf(
		"PostgreSQL %s (fsync off, logged tables) and Redis %s on throwaway servers on this machine (%d cores), "+
			"%d pooled PostgreSQL connections, %v per cell, a token bucket of %d/s with a burst of %d; "+
			"`cd bench/peers && go run . -postgres`\n\n",
		strings.Fields(version)[0],
		redisinfo.Field(info, "redis_version"),
		runtime.NumCPU(),
		cfg.MaxConns,
		d,
		pgRate,
		pgBurst,
	)

	cells := map[string]map[string]pgCell{} // contender → "hot/64" → cell
	bytesPerKey := map[string]float64{}
	for _, c := range contenders {
		cells[c.name] = map[string]pgCell{}
		if c.table != "" {
			if _, err := pool.Exec(ctx, "TRUNCATE "+c.table); err != nil {
				return err
			}
		} else if err := rdb.FlushAll(ctx).Err(); err != nil {
			return err
		}
		for _, where := range []string{"hot", "many"} {
			ks := keys
			if where == "hot" {
				ks = keys[:1]
			}
			for _, n := range pgCallers {
				before := c.trips()
				r := loadgen.Drive(n, ks, d, func(key string) (bool, error) { return c.allow(ctx, key) })
				cells[c.name][fmt.Sprint(where, "/", n)] = pgCell{
					perSec:   float64(r.Decisions) / d.Seconds(),
					admitted: float64(r.Decisions-r.Denied) / float64(max(r.Decisions, 1)),
					p99:      r.P99,
					trips:    float64(c.trips()-before) / float64(max(r.Decisions+r.Errors, 1)),
					errors:   r.Errors,
				}
			}
		}
		// Bytes per key: 10,000 fresh keys decided once each under a slow
		// rate, on an empty table, or Redis's MEMORY USAGE of 100 of them.
		if c.table != "" {
			if _, err := pool.Exec(ctx, "TRUNCATE "+c.table); err != nil {
				return err
			}
			for i := range 10_000 {
				if _, err := c.keep(ctx, fmt.Sprint("bytes:", i)); err != nil {
					return err
				}
			}
			var size, rows int64
			if err := pool.QueryRow(
				ctx, "SELECT pg_total_relation_size('"+c.table+"'), (SELECT count(*) FROM "+c.table+")",
			).Scan(&size, &rows); err != nil {
				return err
			}
			bytesPerKey[c.name] = float64(size) / float64(max(rows, 1))
		} else {
			var sum float64
			for _, k := range keys[:100] {
				if _, err := c.keep(ctx, "bytes:"+k); err != nil {
					return err
				}
				u, err := rdb.MemoryUsage(ctx, redisStore.Key("bytes:"+k, gcraHour), 0).Result()
				if err != nil {
					return err
				}
				sum += float64(u)
			}
			bytesPerKey[c.name] = sum / 100
		}
	}

	base, pgMain, red := contenders[0].name, contenders[2].name, contenders[len(contenders)-1].name
	fmt.Println(
		"| limiter | keys | callers | decisions/s | admitted | p99 | round trips/decision | errors | " +
			"× hand-written | × ratewise on Redis |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, where := range []string{"hot", "many"} {
		label := map[string]string{"hot": "1 (hot)", "many": "100,000"}[where]
		for _, n := range pgCallers {
			cell := fmt.Sprint(where, "/", n)
			for _, c := range contenders {
				r := cells[c.name][cell]
				fmt.Printf(
					"| %s | %s | %d | %.0f | %.0f%% | %v | %.2f | %d | %s | %s |\n",
					c.name,
					label,
					n,
					r.perSec,
					100*r.admitted,
					r.p99.Round(10*time.Microsecond),
					r.trips,
					r.errors,
					ratio(r.perSec, cells[base][cell].perSec),
					ratio(r.perSec, cells[red][cell].perSec),
				)
			}
		}
	}
	fmt.Println()
	fmt.Println("| limiter | bytes per key (10,000 keys: table and index on disk, or Redis MEMORY USAGE) |")
	fmt.Println("| --- | --- |")
	for _, c := range contenders {
		fmt.Printf("| %s | %.0f |\n", c.name, bytesPerKey[c.name])
	}
	hot := cells[pgMain]["hot/64"].perSec / cells[base]["hot/64"].perSec
	fmt.Printf(
		"\nratewise GCRA on PostgreSQL, hot key, 64 callers: %.2f× the hand-written baseline (target: at least 3×)\n",
		hot,
	)
	return nil
}
