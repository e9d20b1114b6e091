package storepostgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// PostgreSQL has no expiry: a row past its expires stays until someone
// deletes it. The store deletes them as it works, a few pages at a time,
// the way Redis samples keys for expiry: every sweepEvery-th write starts a
// sweep, unless one is still running, which scans the next sweepPages
// pages of each table by their row addresses (a TID range scan, with no
// index on the expiry to keep up on every write) and deletes the rows
// there that expired on the server's clock, skipping any a decision holds
// locked. The cursor wraps at the table's end. So the work per sweep is
// bounded, and the sweeps keep pace with the writes that create rows: a
// page holds tens of rows, and a sweep covers sweepPages of them every
// sweepEvery writes. Each instance sweeps from a cursor of its own, starting
// at a page of its own, so that instances share the work.
//
// A deleted row's space is reused only after a vacuum has recorded it as
// free, and autovacuum wakes once a minute at most: under churn, a table
// would grow by a minute of new keys between its passes. So once an
// instance has deleted vacuumAfter rows since its last vacuum, the sweep
// that passes the mark runs VACUUM on the table itself, which skips pages
// with nothing to do (and does nothing for a role that does not own the
// table, which then relies on autovacuum); see docs/postgres.md.
const (
	sweepEvery  = 64
	sweepPages  = 16
	vacuumAfter = 50_000
)

// sweepMargin is how long past its expiry a row stays before a sweep may
// delete it: a key idle that long.
//
// A decision reads the server's clock before it meets a key's row, and if
// the row is deleted while the decision waits for its lock, PostgreSQL
// inserts the decision made at that clock reading on no state: the margin
// keeps a row a sweep deletes from having counted at any reading a waiting
// decision can hold, for waits shorter than it. Beyond that, a key decided
// again soon after its state expires (a short window's, a fast bucket's)
// is cheaper updated in place than deleted and inserted again; and a sweep
// holds the rows it deletes locked until it commits, so that a shared
// transaction that needs one of them waits for the sweep, with every
// decision in it: with a margin of a second, sweeps kept meeting such
// keys, and shared transactions their locks (see "Expiry" in
// docs/postgres.md). The cost is the rows of up to 10 s of keys that came
// and went.
const sweepMargin = 10 * time.Second

type sweeper struct {
	writes  atomic.Uint64
	running atomic.Bool
	page    [2]atomic.Int64 // the next page to sweep, of the state and once tables
	deleted [2]int64        // rows deleted since the table's last vacuum; only the running sweep touches it
}

func (w *sweeper) init() {
	// Instances started together start their cursors apart.
	start := time.Now().UnixNano() / 1000 % 4096
	w.page[0].Store(start)
	w.page[1].Store(start)
}

// tick counts n writes and starts a sweep each time the count passes a
// multiple of sweepEvery.
func (w *sweeper) tick(s *Store, n int) {
	after := w.writes.Add(uint64(n))
	if after/sweepEvery == (after-uint64(n))/sweepEvery || !w.running.CompareAndSwap(false, true) {
		return
	}
	if !s.bg.run(func(ctx context.Context) {
		defer w.running.Store(false)
		// A failed sweep or check is tried again at the next.
		if s.recheck(ctx, s.pool) == nil {
			_, _ = s.sweepOnce(ctx)
		}
	}) {
		w.running.Store(false)
	}
}

// background runs the goroutines a store starts on its own (its sweeps),
// so that Close can stop them and wait for them.
type background struct {
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	mu     sync.Mutex
	closed bool // requires mu
	wg     sync.WaitGroup
}

func newBackground() *background {
	ctx, cancel := context.WithCancel(context.Background())
	return &background{ctx: ctx, cancel: cancel}
}

// run runs f on a goroutine of its own with a context that ends at
// close, or reports false after close.
func (b *background) run(f func(ctx context.Context)) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		f(b.ctx)
	}()
	return true
}

// close ends the context of what run started, and waits for it to return.
func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
}

// sweepOnce deletes the expired rows in the next sweepPages pages of each
// table and returns how many it deleted.
func (s *Store) sweepOnce(parent context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(parent, 10*time.Second)
	defer cancel()
	var total int64
	for i, table := range [2]string{"ratewise.state", "ratewise.once"} {
		from := s.sweep.page[i].Load()
		var deleted, pages int64
		err := s.pool.QueryRow(
			ctx,
			fmt.Sprintf(`WITH gone AS (
			DELETE FROM %[1]s WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM %[1]s WHERE ctid >= $1::tid AND ctid < $2::tid AND expires < ratewise.now_us() - $3::bigint
				FOR UPDATE SKIP LOCKED))
			AND expires < ratewise.now_us() - $3::bigint
			RETURNING 1)
			SELECT count(*), pg_relation_size('%[1]s') / current_setting('block_size')::bigint FROM gone`, table),
			fmt.Sprintf(
				"(%d,0)",
				from,
			),
			fmt.Sprintf("(%d,0)", from+sweepPages),
			sweepMargin.Microseconds(),
		).Scan(&deleted, &pages)
		if err != nil {
			return total, err
		}
		next := from + sweepPages
		if next >= pages {
			next = 0
		}
		s.sweep.page[i].Store(next)
		total += deleted
		if s.sweep.deleted[i] += deleted; s.sweep.deleted[i] >= vacuumAfter {
			// A vacuum scans what the visibility map does not skip: give it
			// time of its own, and count again only once it has run.
			vctx, vcancel := context.WithTimeout(parent, time.Minute)
			_, err := s.pool.Exec(vctx, "VACUUM (SKIP_LOCKED) "+table)
			vcancel()
			if err != nil {
				return total, err
			}
			s.sweep.deleted[i] = 0
		}
	}
	return total, nil
}
