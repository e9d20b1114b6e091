package storepostgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
)

func sharedPool(t *testing.T) *pgxpool.Pool {
	pgtest.Require(t)
	p, err := pgxpool.New(context.Background(), pgtest.Shared(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// inKeyOrder returns a and b so that the first's row key sorts first.
func inKeyOrder(k store.Key, a, b algorithms.Algorithm) (algorithms.Algorithm, algorithms.Algorithm) {
	if bytes.Compare(key(k, a), key(k, b)) < 0 {
		return a, b
	}
	return b, a
}

// waitForLockWaits waits until n statements on the server wait for a
// lock, so that a test sequences its transactions without sleeping.
func waitForLockWaits(t *testing.T, pool *pgxpool.Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements wait for a lock after 10s, want %d", waiting, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSetLocksEveryRow holds a set's first row locked while another of its
// rows is reset, then lets the set run: it must decide on every row
// locked, the reset one created again, so that its limit of 1 per 2h
// admits the set once and denies the next.
func TestSetLocksEveryRow(t *testing.T) {
	ctx := context.Background()
	pool := sharedPool(t)
	s := New(pool, WithCoalescing(0))
	k := store.Key{Name: fmt.Sprint("set-locks-", time.Now().UnixNano())}
	lo, hi := inKeyOrder(
		k,
		algorithms.FixedWindow{Limit: 100, Window: time.Hour},
		algorithms.FixedWindow{Limit: 100, Window: 2 * time.Hour},
	)
	algs := []algorithms.Algorithm{lo, hi}
	if _, err := s.DecideSet(ctx, k, algs, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM ratewise.state WHERE key = $1 FOR UPDATE", key(k, lo)); err != nil {
		t.Fatal(err)
	}
	var res []algorithms.Result
	var setErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, setErr = s.DecideSet(ctx, k, algs, time.Now(), 99)
	}()
	waitForLockWaits(t, pool, 1)
	if err := s.Reset(ctx, k, hi); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if setErr != nil || !res[0].Allowed || !res[1].Allowed {
		t.Fatalf("the set after the reset: %+v, %v; want admitted", res, setErr)
	}
	// hi was reset, then charged 99 of its 100: the next request of 2 fits
	// neither limit.
	again, err := s.DecideSet(ctx, k, algs, time.Now(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if again[1].Allowed || again[1].Remaining != 1 {
		t.Fatalf("after a set charged 99 of the reset limit's 100: %+v; the set's charge was lost", again[1])
	}
}

// TestSetAndBatchShareALockOrder runs a batch that takes a lower row and
// then a higher one beside a set over the same two rows, the higher one
// new: neither may wait for the other in a cycle.
func TestSetAndBatchShareALockOrder(t *testing.T) {
	ctx := context.Background()
	pool := sharedPool(t)
	s := New(pool, WithCoalescing(0))
	s.lockTimeout = "30s" // the batch waits for the row, as the set does
	k := store.Key{Name: fmt.Sprint("lock-order-", time.Now().UnixNano())}
	lo, hi := inKeyOrder(
		k,
		algorithms.FixedWindow{Limit: 100, Window: time.Minute},
		algorithms.FixedWindow{Limit: 100, Window: time.Hour},
	)
	if _, err := s.Decide(ctx, k, lo, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM ratewise.state WHERE key = $1 FOR UPDATE", key(k, lo)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var batchErrs []error
	var setErr error
	wg.Go(func() {
		_, batchErrs = s.SendBatch(
			ctx,
			[]Batch{{Key: k.Name, Alg: lo, Now: time.Now(), Cost: 1}, {Key: k.Name, Alg: hi, Now: time.Now(), Cost: 1}},
		)
	})
	waitForLockWaits(t, pool, 1)
	wg.Go(func() {
		_, setErr = s.DecideSet(ctx, k, []algorithms.Algorithm{lo, hi}, time.Now(), 1)
	})
	waitForLockWaits(t, pool, 2)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if batchErr := errors.Join(batchErrs...); batchErr != nil || setErr != nil {
		t.Fatalf("a set and a batch on the same rows: batch %v, set %v", batchErr, setErr)
	}
}

// TestFailuresBeforeSending: a decision that never reached the server (a
// dial that fails, a context ended while it waited for a connection)
// decided nothing, and its error says so.
func TestFailuresBeforeSending(t *testing.T) {
	alg := algorithms.FixedWindow{Limit: 1, Window: time.Second}
	pool, err := pgxpool.New(context.Background(), "postgres://x@127.0.0.1:1/x?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := New(pool, WithCoalescing(0))
	s.migrated.Store(true)
	_, err = s.Decide(context.Background(), store.Key{Name: "a"}, alg, time.Now(), 1)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrMaybeDecided) {
		t.Fatalf("a dial that fails: %v; want store.ErrUnavailable alone", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s2 := New(sharedPool(t), WithCoalescing(0))
	s2.migrated.Store(true)
	_, err = s2.Decide(ctx, store.Key{Name: "a"}, alg, time.Now(), 1)
	if !errors.Is(err, context.Canceled) || errors.Is(err, store.ErrMaybeDecided) {
		t.Fatalf("a context cancelled before the call: %v; want context.Canceled alone", err)
	}
}

// TestBatchLeavesAStuckRow: a decision on a row another transaction holds
// leaves its batch after the batch's lock timeout and waits alone, and the
// rest of the batch decides meanwhile; so does a decision queued later.
// With coalescing at 1, A goes alone and waits for the held row; B, queued
// behind it on the same row, leaves its batch and waits alone too; C, on
// another key, queued, decides while both wait. Released, the row decides
// A and B.
func TestBatchLeavesAStuckRow(t *testing.T) {
	ctx := context.Background()
	pool := sharedPool(t)
	s := New(pool, WithClientTime(), WithCoalescing(1))
	alg := algorithms.FixedWindow{Limit: 3, Window: time.Minute}
	now := time.Now()
	stuck := store.Key{Name: fmt.Sprint("stuck-", now.UnixNano())}
	if _, err := s.Decide(ctx, stuck, alg, now, 1); err != nil {
		t.Fatal(err)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM ratewise.state WHERE key = $1 FOR UPDATE", key(stuck, alg)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]algorithms.Result, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { results[i], errs[i] = s.Decide(ctx, stuck, alg, now, 1) })
		waitForLockWaits(t, pool, i+1) // B waits alone once its batch let it go
	}
	if n := s.co.Counts().Batches; n != 1 {
		t.Fatalf("%d batches sent, want B's", n)
	}
	// B's batch has returned: no goroutine of the coalescer waits for the
	// held row.
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		if _, _, senders := s.co.Stats(); senders == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("B's batch still waits for the held row after 1s")
		}
	}
	start := time.Now()
	c, err := s.Decide(ctx, store.Key{Name: stuck.Name + "-other"}, alg, now, 2)
	if err != nil || c.Remaining != 1 {
		t.Fatalf("C, beside the held row: %+v, %v", c, err)
	}
	t.Logf("C decided in %v while A and B waited for the held row", time.Since(start))
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || !results[i].Allowed {
			t.Fatalf("decision %c on the released row: %+v, %v", 'A'+i, results[i], errs[i])
		}
	}
	if got := min(results[0].Remaining, results[1].Remaining); got != 0 {
		t.Fatalf("after A and B: Remaining %d, want 0 (3 of 3)", got)
	}
}
