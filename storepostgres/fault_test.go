package storepostgres_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// TestFaults kills the store's connections (pg_terminate_backend) and then
// restarts the server while 16 goroutines decide on a few keys. Every call
// either decides or fails with store.ErrUnavailable, also wrapping
// store.ErrMaybeDecided when the outcome is unknown; a failed call never
// reports an admission; and the store decides again once the server is
// back, without being made again. No key admits more than its limit.
func TestFaults(t *testing.T) {
	srv, pool := ownServer(t)
	ctx := context.Background()
	s := storepostgres.New(pool)
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	const limit = 1_000_000 // per 30 days: every request is admitted while the server is up, in one window
	alg := algorithms.FixedWindow{Limit: limit, Window: 30 * 24 * time.Hour}

	var (
		admitted, unavailable, maybe atomic.Int64
		stop                         atomic.Bool
		wg                           sync.WaitGroup
		bad                          = make(chan error, 16)
	)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := store.Key{Name: []string{"a", "b", "c", "d"}[g%4]}
			for !stop.Load() {
				res, err := s.Decide(ctx, k, alg, time.Now(), 1)
				switch {
				case err == nil && res.Allowed:
					admitted.Add(1)
				case err == nil:
					bad <- errors.New("a denial under a limit no key reaches")
					return
				case res.Allowed:
					bad <- errors.New("a failed call reported an admission")
					return
				case errors.Is(err, store.ErrMaybeDecided) && errors.Is(err, store.ErrUnavailable):
					maybe.Add(1)
				case errors.Is(err, store.ErrUnavailable):
					unavailable.Add(1)
				default:
					bad <- err
					return
				}
			}
		}()
	}
	// recovered waits until a decision succeeds after a fault.
	recovered := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for before := admitted.Load(); admitted.Load() < before+100; {
			select {
			case err := <-bad:
				t.Fatalf(
					"after %s, a call failed with an error that is not store.ErrUnavailable, or lied: %v",
					what,
					err,
				)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no decision in 30s after %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	recovered("the start")

	admin, err := pgxpool.New(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
	).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	recovered("pg_terminate_backend")
	failedBefore := unavailable.Load() + maybe.Load()

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	recovered("a restart")
	stop.Store(true)
	wg.Wait()
	close(bad)
	for err := range bad {
		t.Fatalf("a call failed with an error that is not store.ErrUnavailable, or lied: %v", err)
	}
	if unavailable.Load()+maybe.Load() == failedBefore {
		t.Fatalf("the restart failed no call: the test did not test it")
	}
	t.Logf(
		"terminated %d connections, then restarted: %d admitted, %d failed with ErrUnavailable, %d with ErrMaybeDecided too",
		killed,
		admitted.Load(),
		unavailable.Load(),
		maybe.Load(),
	)

	var total int64
	if err := pool.QueryRow(ctx, "SELECT sum(state[2]) FROM ratewise.state").Scan(&total); err != nil {
		t.Fatal(err)
	}
	// Admissions the callers saw, plus those whose reply was lost, are
	// what the rows counted: nothing admitted was lost or counted twice.
	if total < admitted.Load() || total > admitted.Load()+maybe.Load() {
		t.Fatalf(
			"the keys counted %d admissions; callers saw %d, and %d outcomes are unknown",
			total,
			admitted.Load(),
			maybe.Load(),
		)
	}
}

// TestSilentServer: a server, or a network, that goes silent without
// closing anything (a proxy that stops forwarding) while 16 goroutines
// decide with a deadline of 100ms each. Every call returns by its
// deadline (and a little scheduling), with the caller's context error or
// an error wrapping store.ErrUnavailable, never a decision it did not get;
// and once the proxy forwards again, the store decides again without
// being made anew. It logs what a silent second cost: the calls that
// failed, and how long after the server spoke again the first decision
// came, with pgx's pool holding a connection lost to a deadline until the
// server answers its cancel request, or 15s (docs/postgres.md, Pool
// settings).
func TestSilentServer(t *testing.T) {
	if testing.Short() {
		t.Skip("stalls a server for 2s")
	}
	ctx := context.Background()
	pgtest.Require(t)
	srv := pgtest.Shared(t)
	proxy := pgtest.NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	cfg, err := pgxpool.ParseConfig(proxy.URL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 16
	cfg.ConnConfig.ConnectTimeout = time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(proxy.Resume) // first, if the test fails while stalled
	s := storepostgres.New(pool)
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	alg := algorithms.FixedWindow{Limit: 1_000_000_000, Window: 30 * 24 * time.Hour}
	const deadline = 100 * time.Millisecond
	const slack = 50 * time.Millisecond // the scheduler's, on 2 shared cores
	var (
		admitted, failed atomic.Int64
		lastOK           atomic.Int64 // Unix ns of the latest admission
		stop             atomic.Bool
		wg               sync.WaitGroup
		bad              = make(chan error, 16)
	)
	for g := range 16 {
		wg.Go(func() {
			k := store.Key{Name: testKey(t) + strconv.Itoa(g%4)}
			for !stop.Load() {
				cctx, cancel := context.WithTimeout(ctx, deadline)
				start := time.Now()
				res, err := s.Decide(cctx, k, alg, time.Now(), 1)
				took := time.Since(start)
				cancel()
				switch {
				case took > deadline+slack:
					bad <- fmt.Errorf("a call returned after %v, past its deadline of %v: %+v, %v", took, deadline, res, err)
					return
				case err == nil && res.Allowed:
					admitted.Add(1)
					lastOK.Store(time.Now().UnixNano())
				case err == nil || res.Allowed:
					bad <- fmt.Errorf("%+v, %v", res, err)
					return
				case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable):
					failed.Add(1)
				default:
					bad <- fmt.Errorf("an error of no class: %v", err)
					return
				}
			}
		})
	}
	check := func() {
		t.Helper()
		select {
		case err := <-bad:
			stop.Store(true)
			t.Fatal(err)
		default:
		}
	}
	time.Sleep(300 * time.Millisecond)
	check()
	before := admitted.Load()
	if before == 0 {
		t.Fatal("no decision before the stall")
	}
	proxy.Stall()
	time.Sleep(2 * time.Second)
	check()
	duringOK := admitted.Load() - before
	failedStalled := failed.Load()
	resumed := time.Now()
	proxy.Resume()
	for time.Unix(0, lastOK.Load()).Before(resumed) {
		check()
		if time.Since(resumed) > 20*time.Second {
			stop.Store(true)
			t.Fatal("no decision 20s after the server spoke again")
		}
		time.Sleep(time.Millisecond)
	}
	recovered := time.Unix(0, lastOK.Load()).Sub(resumed)
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	check()
	if duringOK > 16 {
		t.Fatalf("%d decisions while the server was silent", duringOK)
	}
	t.Logf(
		"before the stall %d decisions; while silent for 2s, %d calls failed by their deadline; the first decision "+
			"%v after the server spoke again; %d decisions in all",
		before,
		failedStalled,
		recovered.Round(time.Millisecond),
		admitted.Load(),
	)
}
