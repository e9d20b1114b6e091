package storeredis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestNoScriptRecovery flushes the script cache: the next decision is sent
// again with EVAL in the same call, transparently, and later decisions are
// single EVALSHAs again.
func TestNoScriptRecovery(t *testing.T) {
	c := newClient(t, redistest.Standalone(t).Addr)
	calls := redistest.CountRoundTrips(c)
	s := storeredis.New(c)
	ctx := context.Background()
	alg := algorithms.SlidingLog{Limit: 100, Window: time.Minute}
	key := testKey(t)
	decide := func() {
		t.Helper()
		if res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1); err != nil || !res.Allowed {
			t.Fatalf("Decide: %+v, %v", res, err)
		}
	}
	decide()
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls.Reset()
	decide()
	if got := calls.Load(); got != 2 {
		t.Fatalf("after SCRIPT FLUSH: %d round trips, want 2 (EVALSHA, then EVAL)", got)
	}
	calls.Reset()
	for range 10 {
		decide()
	}
	if got := calls.Load(); got != 10 {
		t.Fatalf("10 decisions took %d round trips, want 10", got)
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}

	t.Run("unreachable", func(t *testing.T) {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { c.Close() })
		res, err := storeredis.New(c).Decide(ctx, store.Key{Name: "k"}, alg, time.Now(), 1)
		if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrUnavailable) || res.Allowed {
			t.Fatalf("got %+v, %v; want ErrUnavailable and not allowed", res, err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		s := storeredis.New(newClient(t, redistest.Standalone(t).Addr))
		dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel()
		if _, err := s.Decide(dctx, store.Key{Name: "k"}, alg, time.Now(), 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("script error", func(t *testing.T) {
		c := newClient(t, redistest.Standalone(t).Addr)
		s := storeredis.New(c)
		key := testKey(t)
		// A sorted set where GCRA expects a string: WRONGTYPE inside the script.
		if err := c.ZAdd(ctx, s.Key(key, alg), redis.Z{Score: 1, Member: "x"}).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Del(ctx, s.Key(key, alg)) })
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
		if !errors.Is(err, store.ErrUnavailable) || res.Allowed {
			t.Fatalf("got %+v, %v; want ErrUnavailable", res, err)
		}
	})

	t.Run("unsupported algorithm", func(t *testing.T) {
		s := storeredis.New(newClient(t, miniredis.RunT(t).Addr()))
		// Neither an unknown name nor a type of another package under a
		// built-in name runs: the script would read its parameters wrongly.
		for _, a := range []algorithms.Algorithm{unknownAlgorithm{alg}, renamedGCRA{alg}} {
			_, err := s.Decide(ctx, store.Key{Name: "k"}, a, time.Now(), 1)
			if !errors.Is(err, store.ErrUnsupported) || errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("%T: got %v, want ErrUnsupported and not ErrUnavailable", a, err)
			}
			if _, err := ratewise.New(s, a); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
				t.Fatalf("ratewise.New with %T: got %v, want ErrInvalidAlgorithm", a, err)
			}
			// Nor may it reset the key of the algorithm whose name it
			// borrows.
			if err := s.Reset(ctx, store.Key{Name: "k"}, a); !errors.Is(err, store.ErrUnsupported) {
				t.Fatalf("Reset with %T: got %v, want ErrUnsupported", a, err)
			}
		}
	})

	t.Run("server killed mid-test", func(t *testing.T) {
		redistest.Require(t)
		srv, err := redistest.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Stop)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		l, _ := ratewise.New(storeredis.New(c), alg)
		if res, err := l.Allow(ctx, "k"); err != nil || !res.Allowed {
			t.Fatalf("before the kill: %+v, %v", res, err)
		}
		srv.Stop()
		for range 3 {
			res, err := l.Allow(ctx, "k")
			if !errors.Is(err, store.ErrUnavailable) || res.Allowed {
				t.Fatalf("after the kill: %+v, %v; want store.ErrUnavailable", res, err)
			}
		}
	})
}

type unknownAlgorithm struct{ algorithms.Algorithm }

func (unknownAlgorithm) Name() string { return "no_such_algorithm" }

// renamedGCRA is another package's algorithm that reuses the name "gcra".
type renamedGCRA struct{ algorithms.GCRA }
