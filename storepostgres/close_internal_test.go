package storepostgres

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
)

// TestCloseWaitsForItsGoroutines: with a batch of shared decisions and a
// sweep in flight on a server gone silent (a proxy that stops forwarding),
// Close does not return until both have ended: the sweep at once (Close
// ends its context), the batch once the server answers again. Once the
// store and its pool are closed, no goroutine is left (goleak).
func TestCloseWaitsForItsGoroutines(t *testing.T) {
	ctx := context.Background()
	pgtest.Require(t)
	srv := pgtest.Shared(t)
	proxy := pgtest.NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
	pool, err := pgxpool.New(ctx, proxy.URL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(proxy.Resume) // first, if the test fails while stalled
	s := New(pool, WithClientTime(), WithCoalescing(1))
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	before := goleak.IgnoreCurrent()

	proxy.Stall()
	alg := algorithms.FixedWindow{Limit: 10, Window: time.Minute}
	var wg sync.WaitGroup
	for i := range 3 { // one alone, two in a batch
		wg.Go(func() {
			_, _ = s.Decide(ctx, store.Key{Name: "close-" + strconv.Itoa(i)}, alg, time.Now(), 1)
		})
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, queued, senders := s.co.Stats(); queued == 0 && senders > 0 {
			break // the batch is taken, and in flight
		}
		if time.Now().After(deadline) {
			t.Fatal("no batch in flight after 5s")
		}
	}
	s.sweep.tick(s, sweepEvery) // a sweep, stalled too
	if !s.sweep.running.Load() {
		t.Fatal("no sweep started")
	}

	closed := make(chan struct{})
	go func() {
		s.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a batch was in flight")
	case <-time.After(100 * time.Millisecond):
	}
	if s.sweep.running.Load() {
		t.Fatal("the sweep still runs 100ms after Close began: Close did not end it")
	}
	proxy.Resume()
	<-closed
	if _, _, senders := s.co.Stats(); senders != 0 {
		t.Fatalf("%d goroutines send batches after Close", senders)
	}
	wg.Wait()
	pool.Close()
	goleak.VerifyNone(t, before)
}
