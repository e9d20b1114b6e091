// Command pghotrow measures what each algorithm costs on one hot PostgreSQL
// row, a key every request hits, such as a global limit of 1,000 per
// minute, on a throwaway server it starts itself
// (internal/testkit/pgtest), with the store's regular (logged) tables.
// For each algorithm, on a new key:
//
//   - One caller, at the limit: the limit's worth of requests and 100 more,
//     one after another, spread evenly over the window at a little under the
//     limit's rate, so that each is admitted and the state reaches the size
//     steady traffic at the limit gives it; the last 100 admissions are
//     timed, with the write-ahead log (WAL) they write, from
//     pg_current_wal_insert_lsn before and after. Then requests at once
//     until one is denied, and 100 denials, timed with their WAL.
//
//   - Contended: then callers decide on the key as fast as they can for a
//     while, far over the limit, as the traffic a global limit protects
//     against: decisions per second, latency, and WAL per decision.
//
// It prints the state column's size on disk after each (pg_column_size,
// after compression) and the size of the table's TOAST relation, where a
// state over about 2 kB goes. The store runs in client-time mode
// (storepostgres.WithClientTime) on a clock of the command's own that
// starts at a window's start, so that a window's worth of traffic takes no
// real window; the contended callers read it as that clock's last instant
// plus the real time since they started. Every algorithm has the same
// limit: GCRA and the token bucket a burst or capacity of it and a refill
// of it per window, the sliding window counter 60 sub-windows.
//
//	go run ./bench/cmd/pghotrow [-limit 1000] [-window 1m] [-d 3s] [-callers 16]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// measured is the WAL sample of the one-caller run: the last this many
// admissions, and as many denials.
const measured = 100

func main() {
	limit := flag.Int64("limit", 1000, "the limit every algorithm gets, per -window")
	window := flag.Duration("window", time.Minute, "the window (or the period of the refill)")
	d := flag.Duration("d", 3*time.Second, "how long each algorithm is contended")
	callers := flag.Int("callers", 16, "concurrent callers on the hot key")
	flag.Parse()
	if *limit < measured+1 || *window <= 0 || *d <= 0 || *callers < 1 {
		fmt.Fprintf(os.Stderr, "pghotrow: want -limit > %d, and -window, -d and -callers > 0\n", measured)
		os.Exit(2)
	}
	if err := run(*limit, *window, *d, *callers); err != nil {
		fmt.Fprintln(os.Stderr, "pghotrow:", err)
		os.Exit(1)
	}
}

// candidate is one algorithm on the hot row.
type candidate struct {
	name   string
	alg    algorithms.Algorithm
	window time.Duration
}

func candidates(limit int64, window time.Duration) []candidate {
	rate := algorithms.Rate{Count: limit, Period: window}
	return []candidate{
		{"GCRA", algorithms.GCRA{Rate: rate, Burst: limit}, window},
		{"token bucket", algorithms.TokenBucket{Capacity: limit, Refill: rate}, window},
		{"fixed window", algorithms.FixedWindow{Limit: limit, Window: window}, window},
		{
			"sliding window, 60 sub-windows",
			algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: 60},
			window,
		},
		{"compact log", algorithms.CompactLog{Limit: limit, Window: window}, window},
		{"sliding log", algorithms.SlidingLog{Limit: limit, Window: window}, window},
	}
}

// server is the throwaway server and the store on it.
type server struct {
	pool  *pgxpool.Pool
	store *storepostgres.Store
}

func run(limit int64, window, d time.Duration, callers int) error {
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
	cfg.MaxConns = int32(callers + 8) // the store's own connections beside the callers' (docs/postgres.md)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	s := storepostgres.New(pool, storepostgres.WithClientTime())
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return err
	}
	var version, fpw string
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('full_page_writes')").
		Scan(&version, &fpw); err != nil {
		return err
	}
	sv := &server{pool: pool, store: s}
	var serial, contended []string
	for _, c := range candidates(limit, window) {
		one, many, err := sv.measure(ctx, c, limit, callers, d)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		serial, contended = append(serial, one), append(contended, many)
	}
	fmt.Printf("PostgreSQL %s (throwaway: fsync off, full_page_writes %s), logged tables; every algorithm "+
		"%d per %v on one key; `go run ./bench/cmd/pghotrow%s`\n\n", version, fpw, limit, window, args())
	fmt.Printf("One caller at the limit: %d admissions spread over the window, then %d denials at once\n\n",
		limit+measured, measured)
	fmt.Println("| algorithm | µs/admission | WAL bytes/admission | µs/denial | WAL bytes/denial | state bytes | " +
		"TOAST relation |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range serial {
		fmt.Println(row)
	}
	fmt.Printf("\nContended: then %d callers for %v, far over the limit\n\n", callers, d)
	fmt.Println("| algorithm | decisions/s | admitted | p50 | p99 | WAL bytes/decision | state bytes | TOAST relation |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, row := range contended {
		fmt.Println(row)
	}
	return nil
}

// args is the command's flags as given, for the header.
func args() string {
	out := ""
	for _, a := range os.Args[1:] {
		out += " " + a
	}
	return out
}

// walLSN is the current WAL insert position, in bytes.
func (sv *server) walLSN(ctx context.Context) (int64, error) {
	var lsn int64
	err := sv.pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint").Scan(&lsn)
	return lsn, err
}

// rowSize returns the state's size on disk in the table's one row, and
// the size of the table's TOAST relation.
func (sv *server) rowSize(ctx context.Context) (state, toast int64, err error) {
	err = sv.pool.QueryRow(ctx, `SELECT coalesce(max(pg_column_size(state)), 0),
		(SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'ratewise.state'::regclass)
		FROM ratewise.state`).Scan(&state, &toast)
	return state, toast, err
}

// measure runs c on a new key, one caller at the limit and then callers
// over it, and returns a row of each table.
func (sv *server) measure(
	ctx context.Context,
	c candidate,
	limit int64,
	callers int,
	d time.Duration,
) (serial, contended string, err error) {
	// An empty table, and TOAST relation, for each algorithm.
	if _, err := sv.pool.Exec(ctx, "TRUNCATE ratewise.state, ratewise.once"); err != nil {
		return "", "", err
	}
	key := store.Key{Name: "global"}
	now := time.Now().Truncate(c.window).Add(c.window) // the command's clock
	decide := func(at time.Time) (bool, error) {
		res, err := sv.store.Decide(ctx, key, c.alg, at, 1)
		return res.Allowed, err
	}
	// A little under the limit's rate, so that every request is admitted.
	spacing := c.window/time.Duration(limit) + time.Microsecond
	admit := func() error {
		now = now.Add(spacing)
		ok, err := decide(now)
		if err == nil && !ok {
			err = fmt.Errorf("denied at the limit's rate")
		}
		return err
	}
	for range limit {
		if err := admit(); err != nil {
			return "", "", err
		}
	}
	walAdmit, tAdmit, err := sv.timed(ctx, admit)
	if err != nil {
		return "", "", err
	}
	for ok := true; ok; { // at once until the first denial
		now = now.Add(time.Microsecond)
		if ok, err = decide(now); err != nil {
			return "", "", err
		}
	}
	walDeny, tDeny, err := sv.timed(ctx, func() error {
		now = now.Add(time.Microsecond)
		ok, err := decide(now)
		if err == nil && ok {
			err = fmt.Errorf("admitted over the limit")
		}
		return err
	})
	if err != nil {
		return "", "", err
	}
	state, toast, err := sv.rowSize(ctx)
	if err != nil {
		return "", "", err
	}
	serial = fmt.Sprintf("| %s | %.0f | %.0f | %.0f | %.0f | %d | %s |", c.name,
		float64(tAdmit.Microseconds())/measured, float64(walAdmit)/measured,
		float64(tDeny.Microseconds())/measured, float64(walDeny)/measured, state, kb(toast))
	contended, err = sv.contended(ctx, c, key, now, callers, d)
	return serial, contended, err
}

// contended has callers decide on key as fast as they can for d, on the
// command's clock from base on.
func (sv *server) contended(
	ctx context.Context,
	c candidate,
	key store.Key,
	base time.Time,
	callers int,
	d time.Duration,
) (string, error) {
	before, err := sv.walLSN(ctx)
	if err != nil {
		return "", err
	}
	var decisions, admitted, failed atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var lat []time.Duration
			for time.Now().Before(deadline) {
				t := time.Now()
				res, err := sv.store.Decide(ctx, key, c.alg, base.Add(t.Sub(start)), 1)
				lat = append(lat, time.Since(t))
				if err != nil {
					failed.Add(1)
					continue
				}
				decisions.Add(1)
				if res.Allowed {
					admitted.Add(1)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	after, err := sv.walLSN(ctx)
	if err != nil {
		return "", err
	}
	if n := failed.Load(); n > 0 {
		return "", fmt.Errorf("%d decisions failed", n)
	}
	state, toast, err := sv.rowSize(ctx)
	if err != nil {
		return "", err
	}
	slices.Sort(all)
	n := decisions.Load()
	return fmt.Sprintf("| %s | %.0f | %d | %v | %v | %.0f | %d | %s |", c.name, float64(n)/elapsed.Seconds(),
		admitted.Load(), all[len(all)/2].Round(10*time.Microsecond), all[len(all)*99/100].Round(10*time.Microsecond),
		float64(after-before)/float64(n), state, kb(toast)), nil
}

// timed runs decide measured times and returns the WAL it wrote and the
// time it took.
func (sv *server) timed(ctx context.Context, decide func() error) (int64, time.Duration, error) {
	before, err := sv.walLSN(ctx)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for range measured {
		if err := decide(); err != nil {
			return 0, 0, err
		}
	}
	elapsed := time.Since(start)
	after, err := sv.walLSN(ctx)
	return after - before, elapsed, err
}

func kb(n int64) string {
	if n == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f kB", float64(n)/1024)
}
