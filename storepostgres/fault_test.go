package storepostgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
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
				t.Fatalf("after %s, a call failed with an error that is not store.ErrUnavailable, or lied: %v", what, err)
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
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&killed); err != nil {
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
	t.Logf("terminated %d connections, then restarted: %d admitted, %d failed with ErrUnavailable, %d with ErrMaybeDecided too",
		killed, admitted.Load(), unavailable.Load(), maybe.Load())

	var total int64
	if err := pool.QueryRow(ctx, "SELECT sum(state[2]) FROM ratewise.state").Scan(&total); err != nil {
		t.Fatal(err)
	}
	// Admissions the callers saw, plus those whose reply was lost, are
	// what the rows counted: nothing admitted was lost or counted twice.
	if total < admitted.Load() || total > admitted.Load()+maybe.Load() {
		t.Fatalf("the keys counted %d admissions; callers saw %d, and %d outcomes are unknown", total, admitted.Load(), maybe.Load())
	}
}
