// Command pgmechanism measures ways to make one rate-limiting decision
// atomic on PostgreSQL, side by side on a hot key, on a throwaway server it
// starts itself (internal/testkit/pgtest). It is the measurement behind the choice
// of mechanism for a PostgreSQL store; every way runs the same minimal GCRA
// step (a key's theoretical arrival time, in integer microseconds, on the
// server's clock):
//
//   - function: one call of a PL/pgSQL function that locks the row, decides
//     and writes, in one round trip;
//
//   - statement: one INSERT ... ON CONFLICT DO UPDATE ... WHERE ...
//     RETURNING, in one round trip, with no function;
//
//   - pure step: one INSERT ... ON CONFLICT DO UPDATE whose SET calls a
//     pure PL/pgSQL step on the locked row's old state, so the upsert takes
//     the one row lock and the function only computes; it writes on a
//     denial too, to return the decision;
//
//   - transaction: what teams write by hand, SELECT ... FOR UPDATE, the
//     step in Go, UPDATE, in a transaction: four round trips, with the
//     row locked across three of them.
//
//     go run ./bench/cmd/pgmechanism [-time 3s] [-callers 1,16,64]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/internal/testkit/pgtest"
)

const schema = `
CREATE UNLOGGED TABLE bucket (key text PRIMARY KEY, tat bigint NOT NULL, admitted boolean NOT NULL DEFAULT true);

CREATE FUNCTION gcra_next(tat bigint, now_us bigint, t bigint, tau bigint, OUT next bigint, OUT ok boolean)
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	tat := greatest(tat, now_us);
	ok := tat + t - now_us <= tau;
	next := CASE WHEN ok THEN tat + t ELSE tat END;
END $$;

CREATE FUNCTION now_us() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint $$;

CREATE FUNCTION gcra(k text, t bigint, tau bigint) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	cur bigint;
	now_us bigint;
BEGIN
	SELECT tat INTO cur FROM bucket WHERE key = k FOR UPDATE;
	IF NOT FOUND THEN
		INSERT INTO bucket (key, tat) VALUES (k, now_us() + t)
		ON CONFLICT (key) DO NOTHING;
		IF FOUND THEN
			RETURN true;
		END IF;
		SELECT tat INTO cur FROM bucket WHERE key = k FOR UPDATE;
	END IF;
	now_us := now_us();
	cur := greatest(cur, now_us);
	IF cur + t - now_us > tau THEN
		RETURN false;
	END IF;
	UPDATE bucket SET tat = cur + t WHERE key = k;
	RETURN true;
END $$;
`

// A rate of 1,000,000 per second with a burst of 1,000: a hot key that
// admits most requests, so every way writes on most decisions.
const (
	interval = 1        // µs between requests at the rate
	tau      = 1000 - 1 // µs of burst beyond the first request
)

type way struct {
	name   string
	trips  int // round trips per decision
	decide func(ctx context.Context, p *pgxpool.Pool, key string) (bool, error)
}

var ways = []way{
	{"function", 1, func(ctx context.Context, p *pgxpool.Pool, key string) (bool, error) {
		var ok bool
		err := p.QueryRow(ctx, "SELECT gcra($1, $2, $3)", key, interval, tau).Scan(&ok)
		return ok, err
	}},
	{"statement", 1, func(ctx context.Context, p *pgxpool.Pool, key string) (bool, error) {
		var tat int64
		err := p.QueryRow(ctx, `INSERT INTO bucket AS b (key, tat) VALUES ($1, now_us() + $2::bigint)
			ON CONFLICT (key) DO UPDATE SET tat = greatest(b.tat, now_us()) + $2::bigint
			WHERE greatest(b.tat, now_us()) + $2::bigint - now_us() <= $3::bigint
			RETURNING tat`, key, interval, tau).Scan(&tat)
		if err == pgx.ErrNoRows {
			return false, nil
		}
		return err == nil, err
	}},
	{"pure step", 1, func(ctx context.Context, p *pgxpool.Pool, key string) (bool, error) {
		var ok bool
		err := p.QueryRow(ctx, `INSERT INTO bucket AS b (key, tat) VALUES ($1, now_us() + $2::bigint)
			ON CONFLICT (key) DO UPDATE SET (tat, admitted) =
				(SELECT g.next, g.ok FROM gcra_next(b.tat, now_us(), $2, $3) g)
			RETURNING admitted`, key, interval, tau).Scan(&ok)
		return ok, err
	}},
	{"transaction", 4, func(ctx context.Context, p *pgxpool.Pool, key string) (bool, error) {
		tx, err := p.Begin(ctx)
		if err != nil {
			return false, err
		}
		defer tx.Rollback(ctx)
		var cur, now int64
		switch err := tx.QueryRow(
			ctx, "SELECT tat, now_us() FROM bucket WHERE key = $1 FOR UPDATE", key,
		).Scan(&cur, &now); err {
		case nil:
		case pgx.ErrNoRows:
			if _, err := tx.Exec(ctx, "INSERT INTO bucket (key, tat) VALUES ($1, 0) ON CONFLICT DO NOTHING", key); err != nil {
				return false, err
			}
			if err := tx.QueryRow(
				ctx, "SELECT tat, now_us() FROM bucket WHERE key = $1 FOR UPDATE", key,
			).Scan(&cur, &now); err != nil {
				return false, err
			}
		default:
			return false, err
		}
		cur = max(cur, now)
		if cur+interval-now > tau {
			return false, tx.Commit(ctx)
		}
		if _, err := tx.Exec(ctx, "UPDATE bucket SET tat = $2 WHERE key = $1", key, cur+interval); err != nil {
			return false, err
		}
		return true, tx.Commit(ctx)
	}},
}

func main() {
	d := flag.Duration("time", 3*time.Second, "how long each way runs at each number of callers")
	callersFlag := flag.String("callers", "1,16,64", "numbers of concurrent callers, comma-separated")
	flag.Parse()
	var callers []int
	for _, f := range strings.Split(*callersFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "pgmechanism: --callers: %q is not a positive number\n", f)
			os.Exit(2)
		}
		callers = append(callers, n)
	}
	if err := run(*d, callers); err != nil {
		fmt.Fprintln(os.Stderr, "pgmechanism:", err)
		os.Exit(1)
	}
}

func run(d time.Duration, callers []int) error {
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
	cfg.MaxConns = int32(slices.Max(callers))
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, schema); err != nil {
		return err
	}
	var version string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	fmt.Printf(
		"PostgreSQL %s on a throwaway server (fsync off, UNLOGGED table), one hot key, %v per row\n\n",
		version,
		d,
	)
	fmt.Println("| way | callers | decisions/s | admitted | p50 | p99 | round trips/decision | ratio to transaction |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, n := range callers {
		results := make([]result, len(ways))
		for i, w := range ways {
			key := fmt.Sprintf("%s-%d", w.name, n)
			if results[i], err = measure(ctx, pool, w, key, n, d); err != nil {
				return fmt.Errorf("%s with %d callers: %w", w.name, n, err)
			}
		}
		base := results[len(ways)-1].perSecond
		for i, w := range ways {
			r := results[i]
			fmt.Printf(
				"| %s | %d | %.0f | %.0f%% | %v | %v | %d | %.2f× |\n",
				w.name,
				n,
				r.perSecond,
				100*r.admitted,
				r.p50,
				r.p99,
				w.trips,
				r.perSecond/base,
			)
		}
	}
	return nil
}

type result struct {
	perSecond, admitted float64
	p50, p99            time.Duration
}

// measure runs w with n callers on one key for d and returns its figures.
// Every way decides on the server's clock (clock_timestamp()), read after
// the row is locked, so no decision is made at a stale time.
func measure(ctx context.Context, pool *pgxpool.Pool, w way, key string, n int, d time.Duration) (result, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		lat      []time.Duration
		admitted atomic.Int64
		firstErr atomic.Value
	)
	stop := time.Now().Add(d)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				start := time.Now()
				ok, err := w.decide(ctx, pool, key)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				mine = append(mine, time.Since(start))
				if ok {
					admitted.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return result{}, err
	}
	if len(lat) == 0 {
		return result{}, fmt.Errorf("no decision in %v", d)
	}
	slices.Sort(lat)
	return result{
		perSecond: float64(len(lat)) / d.Seconds(),
		admitted:  float64(admitted.Load()) / float64(len(lat)),
		p50:       lat[len(lat)/2].Round(time.Microsecond),
		p99:       lat[len(lat)*99/100].Round(time.Microsecond),
	}, nil
}
