// Command pgexpiry measures how the PostgreSQL store keeps its table
// bounded without TTLs: distinct keys pass through a throwaway server (each
// decided once, then idle), and the command prints, every 100,000 keys, the
// rows in ratewise.state, how many of them still count, the table's size
// on disk with its index, and what vacuum has done. The store deletes
// expired rows itself, a few pages per sweep (storepostgres's sweep.go);
// autovacuum then makes their space reusable.
//
//	go run ./bench/cmd/pgexpiry [-keys 1000000] [-callers 16] [-window 1s] [-unlogged]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

func main() {
	keys := flag.Int("keys", 1_000_000, "distinct keys to pass through")
	callers := flag.Int("callers", 16, "concurrent callers")
	window := flag.Duration("window", time.Second, "the fixed window's length: how long a key counts after its decision")
	idle := flag.Duration(
		"idle",
		10*time.Second,
		"how long to go on deciding on 1,000 keys of a working set after the last new key",
	)
	unlogged := flag.Bool("unlogged", false, "create the tables UNLOGGED")
	flag.Parse()
	if err := run(*keys, *callers, *window, *idle, *unlogged); err != nil {
		fmt.Fprintln(os.Stderr, "pgexpiry:", err)
		os.Exit(1)
	}
}

func run(keys, callers int, window, idle time.Duration, unlogged bool) error {
	srv, err := pgtest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(srv.URL)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(callers + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	var opts []storepostgres.Option
	if unlogged {
		opts = append(opts, storepostgres.WithUnlogged())
	}
	s := storepostgres.New(pool, opts...)
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	alg := algorithms.FixedWindow{Limit: 100, Window: window}
	fmt.Printf(
		"PostgreSQL %s (throwaway, fsync off, autovacuum on by default), %s table; %d distinct keys of %s, each "+
			"decided once by %d callers, then %v on a working set of 1,000 keys\n\n",
		version,
		map[bool]string{false: "logged", true: "UNLOGGED"}[unlogged],
		keys,
		alg,
		callers,
		idle,
	)
	fmt.Println(
		"| keys passed | elapsed | rows | rows still counting | table + index size | bytes per row | dead rows | " +
			"vacuums (the store's + autovacuum's) |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")

	start := time.Now()
	var next atomic.Int64
	var failed atomic.Int64
	report := func(passed int64) error {
		var rows, live, size, dead, vacuums int64 // dead is the statistics' estimate
		err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE expires > ratewise.now_us()),
			pg_total_relation_size('ratewise.state'),
			(SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'ratewise.state'::regclass),
			(SELECT vacuum_count + autovacuum_count FROM pg_stat_user_tables WHERE relid = 'ratewise.state'::regclass)
			FROM ratewise.state`).Scan(&rows, &live, &size, &dead, &vacuums)
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %v | %d | %d | %.1f MB | %d | %d | %d |\n", passed, time.Since(start).Round(100*time.Millisecond),
			rows, live, float64(size)/(1<<20), size/max(rows, 1), dead, vacuums)
		return nil
	}
	const step = 100_000
	for done := int64(0); done < int64(keys); {
		batch := min(int64(step), int64(keys)-done)
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				for {
					i := next.Add(1)
					if i > done+batch {
						return
					}
					if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("user:", i)}, alg, time.Now(), 1); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		next.Store(done + batch)
		done += batch
		if err := report(done); err != nil {
			return err
		}
	}
	// The new keys stop; a working set goes on, whose writes drive the
	// sweeps that delete what the passing keys left.
	deadline := time.Now().Add(idle)
	for time.Now().Before(deadline) {
		var wg sync.WaitGroup
		until := time.Now().Add(idle / 5)
		for g := range callers {
			wg.Go(func() {
				for i := g; time.Now().Before(until); i++ {
					if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("working:", i%1000)}, alg, time.Now(), 1); err != nil {
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if err := report(int64(keys)); err != nil {
			return err
		}
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d decisions failed", n)
	}
	return nil
}
