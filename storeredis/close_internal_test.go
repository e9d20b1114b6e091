package storeredis

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
)

// TestCloseWaitsForItsGoroutines: with a batch of shared decisions in
// flight on a Redis that holds its clients (CLIENT PAUSE), Close does not
// return until the batch has been sent and answered. Once the store and
// its client are closed, no goroutine is left (goleak).
func TestCloseWaitsForItsGoroutines(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	s := New(rdb, WithClientTime(), WithCoalescing(1), WithWarnings(0, nil))
	alg := algorithms.FixedWindow{Limit: 10, Window: time.Minute}
	if _, err := s.Decide(ctx, store.Key{Name: "close-warm"}, alg, time.Now(), 0); err != nil {
		t.Fatal(err) // the script loaded, a connection made
	}
	before := goleak.IgnoreCurrent()

	if err := admin.Do(ctx, "CLIENT", "PAUSE", "400", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 3 { // one alone, two in a batch
		wg.Go(func() {
			_, _ = s.Decide(ctx, store.Key{Name: "close-" + strconv.Itoa(i)}, alg, time.Now(), 1)
		})
	}
	for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
		if _, queued, senders := s.co.Stats(); queued == 0 && senders > 0 {
			break // the batch is taken, and in flight
		}
		if time.Now().After(deadline) {
			t.Fatal("no batch in flight after 1s")
		}
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
	<-closed // once the pause ends
	if _, _, senders := s.co.Stats(); senders != 0 {
		t.Fatalf("%d goroutines send batches after Close", senders)
	}
	wg.Wait()
	rdb.Close()
	goleak.VerifyNone(t, before)
}
