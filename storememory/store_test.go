package storememory_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

var (
	ctx = context.Background()
	t0  = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
)

// TestMemoryBoundedUnderChurn sends one request for each of 100,000 distinct
// keys, one every 100µs, with a 1s window: at most 10,000 keys are live at
// any moment, and the store must not hold all 100,000. The store's clock
// (WithClock) runs with the simulated one.
func TestMemoryBoundedUnderChurn(t *testing.T) {
	clock := ratewisetest.NewClock(t0)
	s := storememory.New(storememory.WithClock(clock))
	alg := algorithms.FixedWindow{Limit: 5, Window: time.Second}
	const keys, live = 100_000, 10_000
	peak := 0
	for i := range keys {
		now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
		clock.Set(now)
		if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprintf("user:%d", i)}, alg, now, 1); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 0 {
			peak = max(peak, s.Len())
		}
	}
	// Each shard may run up to its own size plus 64 decisions between sweeps.
	if bound := 2*live + 256*64; peak > bound {
		t.Fatalf("the store held %d entries with %d live, bound %d", peak, live, bound)
	}
}

func TestStateLivesExactlyResetAfter(t *testing.T) {
	clock := ratewisetest.NewClock(t0)
	s := storememory.New(storememory.WithClock(clock))
	alg := algorithms.TokenBucket{Capacity: 4, Refill: algorithms.PerSecond(2)}
	res, err := s.Decide(ctx, store.Key{Name: "k"}, alg, t0, 3)
	if err != nil || res.ResetAfter != 1500*time.Millisecond {
		t.Fatalf("Decide: %+v, %v; want ResetAfter 1.5s", res, err)
	}
	if ttl, _ := s.TTL(ctx, store.Key{Name: "k"}, alg, t0); ttl != res.ResetAfter {
		t.Fatalf("TTL %v, want %v", ttl, res.ResetAfter)
	}
	at := t0.Add(res.ResetAfter)
	if ttl, _ := s.TTL(ctx, store.Key{Name: "k"}, alg, at); ttl != 0 {
		t.Fatalf("TTL at ResetAfter: %v, want 0", ttl)
	}
	// Decisions at ResetAfter find nothing: the key is full. There are
	// enough of them for the shard to sweep.
	clock.Set(at)
	for range 64 {
		if res, _ := s.Decide(ctx, store.Key{Name: "k"}, alg, at, 0); res.Remaining != 4 {
			t.Fatalf("after ResetAfter: %+v; want full", res)
		}
	}
	// A request whose clock reading lags still sees the state: 1ms before
	// ResetAfter, 3 tokens are whole and one is taken. Without the state it
	// would find 4.
	if res, _ := s.Decide(ctx, store.Key{Name: "k"}, alg, at.Add(-time.Millisecond), 1); !res.Allowed ||
		res.Remaining != 2 {
		t.Fatalf("1ms before ResetAfter, after a later peek: %+v; want Remaining 2", res)
	}
	// Once storecheck.ExpiryGrace has passed too on the store's clock, and the second
	// that counts it out, a sweep drops it (a shard sweeps after 64
	// decisions).
	later := at.Add(storecheck.ExpiryGrace + 2*time.Second)
	clock.Set(later)
	for range 64 {
		s.Decide(ctx, store.Key{Name: "k"}, alg, later, 0)
	}
	if n := s.Len(); n != 0 {
		t.Fatalf("%d entries after ResetAfter and storecheck.ExpiryGrace, want none", n)
	}
}

func TestPeekOnIdleKeyStoresNothing(t *testing.T) {
	s := storememory.New()
	for _, alg := range []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 5, Window: time.Second},
		algorithms.SlidingLog{Limit: 5, Window: time.Second},
		algorithms.SlidingWindow{Limit: 5, Window: time.Second, SubWindows: 10},
		algorithms.TokenBucket{Capacity: 5, Refill: algorithms.PerSecond(1)},
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5},
	} {
		if _, err := s.Decide(ctx, store.Key{Name: "k"}, alg, t0, 0); err != nil {
			t.Fatal(err)
		}
		if n := s.Len(); n != 0 {
			t.Fatalf("%s: a peek at an idle key left %d entries", alg.Kind().String(), n)
		}
	}
}

func TestResetRemovesState(t *testing.T) {
	s := storememory.New()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	s.Decide(ctx, store.Key{Name: "k"}, alg, t0, 5)
	if err := s.Reset(ctx, store.Key{Name: "k"}, alg); err != nil || s.Len() != 0 {
		t.Fatalf("Reset: %v with %d entries left", err, s.Len())
	}
}

func TestCancelledContext(t *testing.T) {
	s := storememory.New()
	c, cancel := context.WithCancel(ctx)
	cancel()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	if _, err := s.Decide(c, store.Key{Name: "k"}, alg, t0, 1); err != context.Canceled {
		t.Fatalf("Decide: %v, want context.Canceled", err)
	}
	if err := s.Reset(c, store.Key{Name: "k"}, alg); err != context.Canceled {
		t.Fatalf("Reset: %v, want context.Canceled", err)
	}
	if _, err := s.TTL(c, store.Key{Name: "k"}, alg, t0); err != context.Canceled {
		t.Fatalf("TTL: %v, want context.Canceled", err)
	}
}

// TestManyKeysConcurrently runs under -race: keys spread over shards, each
// admitting exactly its limit.
func TestManyKeysConcurrently(t *testing.T) {
	s := storememory.New()
	alg := algorithms.SlidingLog{Limit: 3, Window: time.Minute}
	const keys, goroutines = 200, 8
	admitted := make([][keys]int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for k := range keys {
				for range 2 {
					res, err := s.Decide(ctx, store.Key{Name: fmt.Sprint(k)}, alg, t0, 1)
					if err != nil {
						t.Error(err)
						return
					}
					if res.Allowed {
						admitted[g][k]++
					}
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		total := 0
		for g := range goroutines {
			total += admitted[g][k]
		}
		if total != 3 {
			t.Fatalf("key %d admitted %d, want 3", k, total)
		}
	}
}

// TestHotKeyConcurrently runs under -race: goroutines deciding, peeking at
// and refunding one key, which soon denies without a lock (the hot entry)
// or under the read lock, admit exactly its limit and what was refunded,
// under every algorithm.
func TestHotKeyConcurrently(t *testing.T) {
	const goroutines, tries, limit = 8, 100, 50
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, limit, time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(k.String(), func(t *testing.T) {
			s := storememory.New()
			var admitted, refunded atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range tries {
						res, err := s.Decide(ctx, store.Key{Name: "hot"}, alg, t0, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if res.Allowed {
							admitted.Add(1)
							if g == 0 && i%4 == 0 {
								if _, err := s.Refund(ctx, store.Key{Name: "hot"}, alg, t0, res.At, 1); err != nil {
									t.Error(err)
									return
								}
								refunded.Add(1)
							}
						}
						if _, err := s.Decide(ctx, store.Key{Name: "hot"}, alg, t0, 0); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if got, want := admitted.Load(), limit+refunded.Load(); got != want {
				t.Fatalf("admitted %d, want the limit %d and the %d refunded", got, limit, refunded.Load())
			}
		})
	}
}

// TestNoReadingDropsAnotherKeysState: sweeps go by the store's own clock,
// never a caller's, so readings far ahead of a key's own clock, from a
// limiter with a clock of its own or a clock stepped forward, drop none of
// its live state. A victim key uses 3 of SlidingLog's 3 per minute; 100,000
// other keys are then decided with a clock 2 minutes ahead, enough for
// every shard to sweep; 5s after its requests the victim still admits
// nothing. (Sweeping by the caller's reading, it admitted 3 more: 6 within
// 5s.)
func TestNoReadingDropsAnotherKeysState(t *testing.T) {
	alg := algorithms.SlidingLog{Limit: 3, Window: time.Minute}
	s := storememory.New()
	for range 3 {
		if res, err := s.Decide(ctx, store.Key{Name: "victim"}, alg, t0, 1); err != nil || !res.Allowed {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	ahead := t0.Add(2 * time.Minute)
	for i := range 100_000 {
		if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("other:", i)}, alg, ahead, 1); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := s.Decide(ctx, store.Key{Name: "victim"}, alg, t0.Add(5*time.Second), 1); err != nil || res.Allowed {
		t.Fatalf(
			"the victim 5s after using its 3 per minute, once other keys were decided 2 minutes ahead: %+v, %v; want denied",
			res,
			err,
		)
	}
}
