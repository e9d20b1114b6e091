package storeredis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDenyCache drives a key to a denial on real Redis in client-time mode,
// then asks again through the same store: requests of cost 1 with the same
// parameters are answered without a round trip, each with the Result Redis
// gives (compared with an inspection by a store without the cache, which
// reports what a request of cost 1 would get), until RetryAfter, where the
// request goes to Redis and is admitted. Another cost, other parameters, and
// anything after this store resets the key go to Redis.
func TestDenyCache(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	c := newClient(t, addr)
	trips := redistest.CountRoundTrips(c)
	s := storeredis.New(c, storeredis.WithClientTime())
	plain := storeredis.New(newClient(t, addr), storeredis.WithClientTime(), storeredis.WithDenyCache(0))
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(3), Burst: 2},
		algorithms.TokenBucket{Capacity: 2, Refill: algorithms.PerSecond(3)},
		algorithms.FixedWindow{Limit: 2, Window: time.Second},
		algorithms.SlidingLog{Limit: 2, Window: time.Second},
		algorithms.CompactLog{Limit: 2, Window: time.Second},
		algorithms.SlidingWindow{Limit: 2, Window: time.Second, SubWindows: 4},
	} {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			key := testKey(t)
			now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			decide := func(s *storeredis.Store, alg algorithms.Algorithm, cost int64) (algorithms.Result, int64) {
				t.Helper()
				before := trips.Load()
				res, err := s.Decide(ctx, store.Key{Name: key}, alg, now, cost)
				if err != nil {
					t.Fatal(err)
				}
				return res, trips.Load() - before
			}
			for range 2 {
				decide(s, alg, 1)
			}
			first, n := decide(s, alg, 1)
			if first.Allowed || n != 1 {
				t.Fatalf("the third request: %+v in %d round trips, want a denial from Redis", first, n)
			}
			if _, n := decide(s, alg, 2); n != 1 {
				t.Fatalf("a request of cost 2 took %d round trips, want 1", n)
			}
			var hits int
			for now.Before(first.At.Add(first.RetryAfter)) {
				want, _ := decide(plain, alg, 0)
				got, n := decide(s, alg, 1)
				if got != want {
					t.Fatalf("at %v: got %+v, want %+v (what Redis reports)", now, got, want)
				}
				if n == 0 {
					hits++
				}
				now = now.Add(first.RetryAfter / 7)
			}
			if hits == 0 {
				t.Fatal("no request was answered by the cache")
			}
			// At RetryAfter, Redis decides again, and admits.
			now = first.At.Add(first.RetryAfter)
			if res, n := decide(s, alg, 1); !res.Allowed || n != 1 {
				t.Fatalf("at RetryAfter: %+v in %d round trips, want an admission from Redis", res, n)
			}
			// Denied again, then reset by this store: Redis admits at once.
			for range 3 {
				decide(s, alg, 1)
			}
			if err := s.Reset(ctx, store.Key{Name: key}, alg); err != nil {
				t.Fatal(err)
			}
			if res, n := decide(s, alg, 1); !res.Allowed || n != 1 {
				t.Fatalf("after Reset: %+v in %d round trips, want an admission from Redis", res, n)
			}
			// Other parameters: a raised limit is asked of Redis.
			decide(s, alg, 1)
			if res, _ := decide(s, alg, 1); res.Allowed {
				t.Fatalf("the limit of 2 admitted a third request: %+v", res)
			}
			p := algo.ParamsOf(alg)
			p.Limit = 10
			if p.Burst != 0 {
				p.Burst = 10
			}
			raised, err := alg.Kind().New(p)
			if err != nil {
				t.Fatal(err)
			}
			if res, n := decide(s, raised, 1); !res.Allowed || n != 1 {
				t.Fatalf("with the limit raised to 10: %+v in %d round trips, want an admission from Redis", res, n)
			}
		})
	}
}

// TestDenyCacheOverDeniesOnlyForOtherInstances shows the documented
// exception: a Reset by another store on the same Redis is not seen, so
// this store denies until the RetryAfter it remembered, and no longer.
func TestDenyCacheOverDeniesOnlyForOtherInstances(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	s := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
	other := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}
	key, now := testKey(t), time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Decide(ctx, store.Key{Name: key}, alg, now, 1)
	denied, err := s.Decide(ctx, store.Key{Name: key}, alg, now, 1)
	if err != nil || denied.Allowed {
		t.Fatalf("%+v, %v; want a denial", denied, err)
	}
	if err := other.Reset(ctx, store.Key{Name: key}, alg); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Decide(ctx, store.Key{Name: key}, alg, now.Add(denied.RetryAfter-time.Microsecond), 1); res.Allowed {
		t.Fatalf("the cache admitted: %+v", res)
	}
	if res, _ := s.Decide(ctx, store.Key{Name: key}, alg, now.Add(denied.RetryAfter), 1); !res.Allowed {
		t.Fatalf("at the remembered RetryAfter: %+v, want an admission", res)
	}
}

// TestDenyCacheHitAllocatesNothing: a denial answered by the cache
// allocates nothing.
func TestDenyCacheHitAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	s := storeredis.New(newClient(t, redistest.Standalone(t).Addr), storeredis.WithClientTime())
	var alg algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1} // as a Limiter holds it
	key, now := testKey(t), time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for range 2 {
		if _, err := s.Decide(ctx, store.Key{Name: key}, alg, now, 1); err != nil {
			t.Fatal(err)
		}
	}
	var res algorithms.Result
	var err error
	allocs := testing.AllocsPerRun(100, func() { res, err = s.Decide(ctx, store.Key{Name: key}, alg, now, 1) })
	if err != nil || res.Allowed {
		t.Fatalf("%+v, %v; want a denial", res, err)
	}
	if allocs != 0 {
		t.Fatalf("a cached denial allocates %.1f times", allocs)
	}
}

func BenchmarkDenyCacheHit(b *testing.B) {
	ctx := context.Background()
	s := storeredis.New(newClient(b, redistest.Standalone(b).Addr), storeredis.WithClientTime())
	var alg algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for range 2 {
		s.Decide(ctx, store.Key{Name: "bench"}, alg, now, 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Decide(ctx, store.Key{Name: "bench"}, alg, now, 1)
	}
}

// TestDenyCacheAfterARequestWithAnID: a request with the caller's request
// ID goes to Redis past the deny cache, and what it does to the key counts
// for the cache all the same: a denial of cost 2 at a later clock reading
// moves the key's latest time, so a request of cost 1 at the earlier
// reading is decided at that time (its At and waits), as Redis decides it,
// not as the cached denial would answer it.
func TestDenyCacheAfterARequestWithAnID(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	s := storeredis.New(newClient(t, addr), storeredis.WithClientTime(), storeredis.WithWarnings(0, nil))
	plain := storeredis.New(
		newClient(t, addr),
		storeredis.WithClientTime(),
		storeredis.WithDenyCache(0),
		storeredis.WithWarnings(0, nil),
	)
	alg := algorithms.SlidingLog{Limit: 2, Window: 10 * time.Second}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, st := range []*storeredis.Store{s, plain} {
		k := store.Key{Name: testKey(t) + ":" + fmt.Sprint(st == plain)}
		for range 3 { // the third denied, and remembered by s
			if _, err := st.Decide(ctx, k, alg, now, 1); err != nil {
				t.Fatal(err)
			}
		}
		later := ratewise.WithRequestID(ctx, "later")
		if res, err := st.Decide(later, k, alg, now.Add(time.Second), 2); err != nil || res.Allowed {
			t.Fatalf("a request of cost 2 with an ID, a second later: %+v, %v; want a denial", res, err)
		}
	}
	got, err := s.Decide(ctx, store.Key{Name: testKey(t) + ":false"}, alg, now, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.Decide(ctx, store.Key{Name: testKey(t) + ":true"}, alg, now, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || !got.At.Equal(now.Add(time.Second)) {
		t.Fatalf("a request of cost 1 at the first reading: %+v; without the cache %+v, decided a second later", got, want)
	}
}
