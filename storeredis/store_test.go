package storeredis_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/redisinfo"
	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// Every go-redis client kind users deploy with fits the store.
var (
	_ storeredis.Client = (*redis.Client)(nil) // standalone and Sentinel (NewFailoverClient)
	_ storeredis.Client = (*redis.ClusterClient)(nil)
	_ storeredis.Client = (*redis.Ring)(nil)
	_ storeredis.Client = redis.UniversalClient(nil)
)

// allAlgorithms is every algorithm of the registry at 5 per minute.
var allAlgorithms = redisinfo.Algorithms(5, time.Minute, 6)

// Every algorithm of the registry has a Lua step, so the store runs it.
func TestEveryKindHasAStep(t *testing.T) {
	s := storeredis.New(nil)
	for _, alg := range allAlgorithms {
		if err := s.CheckAlgorithm(alg); err != nil {
			t.Errorf("%s: %v", alg, err)
		}
	}
}

// TestServerTimeSharedUnderClockSkew: two app servers whose clocks differ by
// 5s either way share one limit in the default mode, because scripts read
// Redis's TIME: together they admit the limit once, and both are told the
// same wait. Deciding on their own clocks, they would be told waits 10s
// apart.
func TestServerTimeSharedUnderClockSkew(t *testing.T) {
	s := storeredis.New(newClient(t, redistest.Standalone(t).Addr))
	real := time.Now()
	for _, alg := range allAlgorithms {
		t.Run(alg.Kind().Name(), func(t *testing.T) {
			key := testKey(t)
			a, _ := ratewise.New(s, alg, ratewise.WithClock(ratewisetest.NewClock(real.Add(-5*time.Second))))
			b, _ := ratewise.New(s, alg, ratewise.WithClock(ratewisetest.NewClock(real.Add(5*time.Second))))
			admitted := 0
			for i := range 10 {
				l := a
				if i%2 == 1 {
					l = b
				}
				res, err := l.Allow(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				if res.Allowed {
					admitted++
				}
			}
			if admitted != 5 {
				t.Fatalf("two servers 10s apart admitted %d, want the shared limit 5", admitted)
			}
			ra, errA := a.Peek(context.Background(), key)
			rb, errB := b.Peek(context.Background(), key)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			// Only the real time between the two calls separates them.
			if d := ra.RetryAfter - rb.RetryAfter; ra.RetryAfter <= 0 || d < 0 || d > time.Second {
				t.Fatalf("RetryAfter %v for one server and %v for the other, want the same wait", ra.RetryAfter, rb.RetryAfter)
			}
		})
	}
}

// TestClientTimeFollowsTheCallersClock shows why server time is the default:
// with client time, two servers 5s apart straddle a window boundary and a
// fixed window admits twice.
func TestClientTimeFollowsTheCallersClock(t *testing.T) {
	s := storeredis.New(newClient(t, miniredis.RunT(t).Addr()), storeredis.WithClientTime())
	alg := algorithms.FixedWindow{Limit: 5, Window: time.Minute}
	boundary := time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC)
	a, _ := ratewise.New(s, alg, ratewise.WithClock(ratewisetest.NewClock(boundary.Add(-2*time.Second))))
	b, _ := ratewise.New(s, alg, ratewise.WithClock(ratewisetest.NewClock(boundary.Add(3*time.Second))))
	admitted := 0
	for _, l := range []*ratewise.Limiter{a, b} {
		for range 5 {
			if res, _ := l.Allow(context.Background(), "k"); res.Allowed {
				admitted++
			}
		}
	}
	if admitted != 10 {
		t.Fatalf("admitted %d, want 10: each client's clock picked its own window", admitted)
	}
}

func TestKeyLayout(t *testing.T) {
	s := storeredis.New(nil)
	for _, tt := range []struct {
		alg  algorithms.Algorithm
		want string
	}{
		{algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 5}, "ratewise:gcra:1s:{user:1001}"},
		{algorithms.TokenBucket{Capacity: 5, Refill: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}}, "ratewise:token_bucket:1500ms:{user:1001}"},
		{algorithms.FixedWindow{Limit: 100, Window: 24 * time.Hour}, "ratewise:fixed_window:24h:{user:1001}"},
		{algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6}, "ratewise:sliding_window:1m/6:{user:1001}"},
	} {
		if got := s.Key("user:1001", tt.alg); got != tt.want {
			t.Errorf("Key = %q, want %q", got, tt.want)
		}
	}
	s = storeredis.New(nil, storeredis.WithKeyPrefix("rl:"))
	if got, want := s.Key("a{b}%c", algorithms.SlidingLog{Limit: 1, Window: time.Minute}), "rl:sliding_log:1m:{a%7Bb%7D%25c}"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
	// A hash tag in the prefix would put every key in one Cluster slot:
	// its braces are escaped, so each key's own tag decides its slot.
	s = storeredis.New(nil, storeredis.WithKeyPrefix("{rl}:"))
	alg := algorithms.SlidingLog{Limit: 1, Window: time.Minute}
	if got, want := s.Key("alice", alg), "%7Brl%7D:sliding_log:1m:{alice}"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

// adversarialKeys are distinct user keys that naive layouts confuse.
var adversarialKeys = []string{
	"a", "a:b", "a}", "{a}", "}{", "{", "}", "a{b}c", "a%7Bb", "a{b", "%", "%25", "%7B", "%7D",
	"a b", " ", "a:{b}", "gcra:{a}", "\x00", "\xff\xfe", "é", "e\u0301", strings.Repeat("x", 10_000),
	strings.Repeat("{", 100), "a\nb", "*", "?",
}

func TestKeysNeverCollide(t *testing.T) {
	s := storeredis.New(nil)
	seen := map[string]string{}
	for _, alg := range allAlgorithms {
		for _, k := range adversarialKeys {
			rk := s.Key(k, alg)
			if prev, dup := seen[rk]; dup {
				t.Fatalf("keys %q and %q (with %s) both map to %q", prev, k, alg.Kind().Name(), rk)
			}
			seen[rk] = k
			// Exactly one hash tag: the escaped key contains no brace.
			if strings.Count(rk, "{") != 1 || strings.Count(rk, "}") != 1 {
				t.Fatalf("key %q maps to %q, which has more than one brace pair", k, rk)
			}
		}
	}
}

// TestAdversarialKeysOnCluster decides on every adversarial key on a real
// 3-master cluster (no CROSSSLOT or MOVED reaches the caller), checks that
// the state landed in the slot of the key's hash tag, and that keys stay
// independent.
func TestAdversarialKeysOnCluster(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
	t.Cleanup(func() { c.Close() })
	s := storeredis.New(c)
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerMinute(1), Burst: 1}
	for i, k := range adversarialKeys {
		key := testKey(t) + ":" + k
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
		if err != nil {
			t.Fatalf("key %d %q: %v", i, k, err)
		}
		if !res.Allowed {
			t.Fatalf("key %d %q: the first request was denied, so it shares state with another key", i, k)
		}
		rk := s.Key(key, alg)
		tag := rk[strings.Index(rk, "{")+1 : strings.LastIndex(rk, "}")]
		slot, err := c.ClusterKeySlot(ctx, rk).Result()
		if err != nil {
			t.Fatal(err)
		}
		tagSlot, _ := c.ClusterKeySlot(ctx, tag).Result()
		if slot != tagSlot {
			t.Fatalf("key %q: slot %d, but its tag's slot is %d", k, slot, tagSlot)
		}
		if n, err := c.Exists(ctx, rk).Result(); err != nil || n != 1 {
			t.Fatalf("key %q: state not found at %q (%v)", k, rk, err)
		}
	}
}

// TestEveryWriteHasATTL checks, for every algorithm in both time modes, that
// the key's TTL is its ResetAfter rounded up to the millisecond (plus
// ClientTimeGrace in client-time mode), and that an idle key vanishes on its
// own once that time has passed (miniredis's clock is moved, not waited for).
func TestEveryWriteHasATTL(t *testing.T) {
	for _, mode := range []struct {
		name  string
		opts  []storeredis.Option
		grace time.Duration
	}{
		{"client-time", []storeredis.Option{storeredis.WithClientTime()}, storeredis.ClientTimeGrace},
		{"server-time", nil, 0},
	} {
		t.Run(mode.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			s := storeredis.New(newClient(t, m.Addr()), mode.opts...)
			ctx := context.Background()
			now := time.Date(2026, 6, 1, 13, 59, 35, 123456000, time.UTC)
			for _, alg := range allAlgorithms {
				t.Run(alg.Kind().Name(), func(t *testing.T) {
					key := testKey(t)
					var res algorithms.Result
					for i := range 3 {
						at := now.Add(time.Duration(i) * time.Second)
						m.SetTime(at) // the server's clock, for server time
						var err error
						if res, err = s.Decide(ctx, store.Key{Name: key}, alg, at, 1); err != nil {
							t.Fatal(err)
						}
					}
					ttl := m.TTL(s.Key(key, alg))
					if want := (res.ResetAfter + time.Millisecond - 1).Truncate(time.Millisecond) + mode.grace; ttl != want {
						t.Fatalf("TTL %v, want %v for ResetAfter %v", ttl, want, res.ResetAfter)
					}
					m.FastForward(ttl)
					if m.Exists(s.Key(key, alg)) {
						t.Fatalf("the key outlived its TTL")
					}
				})
			}
		})
	}
}

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

// TestSlidingLogMembersUnique: 8 clients each admit 25 requests, all 200 at
// distinct microseconds interleaved between the clients; no record
// overwrites another, and the log counts all 200.
func TestSlidingLogMembersUnique(t *testing.T) {
	addr := redistest.Standalone(t).Addr
	alg := algorithms.SlidingLog{Limit: 1000, Window: time.Minute}
	key := testKey(t)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for c := range 8 {
		s := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
		wg.Go(func() {
			for i := range 25 {
				res, err := s.Decide(context.Background(), store.Key{Name: key}, alg, now.Add(time.Duration(i*8+c)*time.Microsecond), 1)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
	records, err := newClient(t, addr).ZCount(context.Background(), s.Key(key, alg), "0", "+inf").Result()
	if err != nil || admitted.Load() != 200 || records > 200 {
		t.Fatalf("%d admitted, %d records (%v); want 200 admitted in at most 200 records", admitted.Load(), records, err)
	}
	res, err := s.Decide(context.Background(), store.Key{Name: key}, alg, now.Add(time.Second), 0)
	if err != nil || res.Remaining != 800 {
		t.Fatalf("Peek: %+v, %v; want Remaining 800", res, err)
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
			if _, err := ratewise.New(s, a); !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
				t.Fatalf("ratewise.New with %T: got %v, want ErrUnknownAlgorithm", a, err)
			}
			// Nor may it reset or inspect the key of the algorithm whose
			// name it borrows.
			if err := s.Reset(ctx, store.Key{Name: "k"}, a); !errors.Is(err, store.ErrUnsupported) {
				t.Fatalf("Reset with %T: got %v, want ErrUnsupported", a, err)
			}
			if _, err := s.TTL(ctx, store.Key{Name: "k"}, a, time.Now()); !errors.Is(err, store.ErrUnsupported) {
				t.Fatalf("TTL with %T: got %v, want ErrUnsupported", a, err)
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

// TestRing runs decisions through a two-shard Ring, the last client kind.
func TestRing(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{
		"a": miniredis.RunT(t).Addr(), "b": miniredis.RunT(t).Addr(),
	}})
	t.Cleanup(func() { ring.Close() })
	l, _ := ratewise.New(storeredis.New(ring), algorithms.FixedWindow{Limit: 2, Window: time.Minute})
	for i := range 20 {
		key := fmt.Sprint("user:", i)
		var admitted int
		for range 3 {
			res, err := l.Allow(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				admitted++
			}
		}
		if admitted != 2 {
			t.Fatalf("key %s admitted %d, want 2", key, admitted)
		}
	}
}

// TestClientTimeNeverMeansServerTime: in client-time mode every time in
// range is the caller's, the Unix epoch included; no time selects Redis's
// clock, and a time out of range is an error, not Redis's clock either.
func TestClientTimeNeverMeansServerTime(t *testing.T) {
	s := storeredis.New(newClient(t, miniredis.RunT(t).Addr()), storeredis.WithClientTime())
	alg := algorithms.FixedWindow{Limit: 5, Window: time.Second}
	for _, at := range []time.Time{time.Unix(0, 0), time.UnixMicro(1), algorithms.MaxTime} {
		res, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, at, 1)
		if err != nil || !res.At.Equal(at) {
			t.Fatalf("decided at %v for a now of %v (%v)", res.At, at, err)
		}
	}
	for _, at := range []time.Time{{}, time.Unix(0, -1000)} {
		if _, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, at, 1); !errors.Is(err, algorithms.ErrInvalidTime) {
			t.Fatalf("a now of %v: %v, want ErrInvalidTime", at, err)
		}
	}
}

// TestStateOfOtherVersions: keys an older ratewise wrote, under key names
// without a scope, are never read; a key in the current layout with fields
// missing or values no decision writes decides without an error and within
// range.
func TestStateOfOtherVersions(t *testing.T) {
	for _, target := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"miniredis", func(t *testing.T) string { return miniredis.RunT(t).Addr() }},
		{"redis", func(t *testing.T) string { return redistest.Standalone(t).Addr }},
	} {
		t.Run(target.name, func(t *testing.T) {
			c := newClient(t, target.addr(t))
			s := storeredis.New(c)
			ctx := context.Background()
			now := time.Now()
			tat := fmt.Sprint(now.Add(time.Minute).UnixMicro())
			states := map[string][]any{
				"fixed_window":   {"garbage", "1 2 3", "-5 7", fmt.Sprint(now.UnixMicro()) + " 99999"},
				"token_bucket":   {"6000000 " + fmt.Sprint(now.UnixMicro()), tat, tat + " 7", tat + " 1 2", "x", "-1 -1 -1 -1"},
				"gcra":           {tat, tat + " 3", tat + " 3 " + fmt.Sprint(now.Add(time.Hour).UnixMicro()) + " 1", "9999999999999999 0 0 5", "", tat + " 0 99999999999999999999 5"},
				"sliding_log":    {[]redis.Z{{Score: float64(now.UnixMicro()), Member: "abc"}}, []redis.Z{{Score: -5, Member: "T"}}, []redis.Z{{Score: float64(now.UnixMicro()), Member: "7"}, {Score: float64(now.UnixMicro() + 1), Member: "3"}}},
				"sliding_window": {[]redis.Z{{Score: 1, Member: "x"}, {Score: -1e15, Member: "L"}}, []redis.Z{{Score: float64(now.UnixMicro()), Member: "100"}}, []redis.Z{{Score: -1e20, Member: "L"}}},
				"compact_log": {"garbage", strings.Repeat("\xff", 40),
					ring(2, 5, 1, 0) + strings.Repeat("\x00", 16),                               // head past the ring
					ring(2, 0, 2, 1<<60) + strings.Repeat("\x00", 16),                           // a latest time past 2^52
					ring(4, 0, 4, uint64(now.UnixMicro())) + ring(uint64(now.UnixMicro())),      // ring shorter than its header says
					ring(1, 0, 1, uint64(now.UnixMicro())) + ring(uint64(now.UnixMicro()))[:8]}, // a valid ring of one
			}
			for _, alg := range allAlgorithms {
				key := testKey(t) + ":" + alg.Kind().Name()
				// An older version's key for the same user.
				old := storeredis.DefaultKeyPrefix + alg.Kind().Name() + ":{" + key + "}"
				if err := c.Set(ctx, old, "1 1", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				if res, err := s.Decide(ctx, store.Key{Name: key}, alg, now, 0); err != nil || res.Remaining != algo.MaxCost(alg) {
					t.Fatalf("%s beside an older version's key: %+v, %v; want full", alg.Kind().Name(), res, err)
				}
				for i, st := range states[alg.Kind().Name()] {
					k := fmt.Sprintf("%s:%d", key, i)
					rk := s.Key(k, alg)
					var err error
					if z, ok := st.([]redis.Z); ok {
						err = c.ZAdd(ctx, rk, z...).Err()
					} else {
						err = c.Set(ctx, rk, st, time.Minute).Err()
					}
					if err != nil {
						t.Fatal(err)
					}
					for cost := int64(0); cost <= algo.MaxCost(alg); cost++ {
						res, err := s.Decide(ctx, store.Key{Name: k}, alg, now, cost)
						if err != nil || res.Remaining < 0 || res.Remaining > algo.MaxCost(alg) || res.RetryAfter < 0 || res.ResetAfter < 0 ||
							res.Allowed != (res.RetryAfter == 0) {
							t.Fatalf("%s on the state %v, cost %d: %+v, %v", alg.Kind().Name(), st, cost, res, err)
						}
					}
				}
			}
		})
	}
}

// TestExpiredRecordsAreRemovedInBoundedSteps: when thousands of records
// expire at once, one decision removes at most 1,000 of them, so that no
// call holds Redis for long; the rest go with the next calls, and the
// decisions count only what is live throughout.
func TestExpiredRecordsAreRemovedInBoundedSteps(t *testing.T) {
	c := newClient(t, redistest.Standalone(t).Addr)
	s := storeredis.New(c, storeredis.WithClientTime())
	ctx := context.Background()
	alg := algorithms.SlidingLog{Limit: 10_000, Window: time.Minute}
	key := testKey(t)
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := redisinfo.FillLog(ctx, s, key, alg, 0, 2_500, start, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	records := func() int64 {
		n, err := c.ZCount(ctx, s.Key(key, alg), "0", "+inf").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	later := start.Add(2 * time.Minute)
	for i, want := range []int64{1_501, 502, 3} {
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, later.Add(time.Duration(i)*time.Microsecond), 1)
		if err != nil || !res.Allowed || res.Remaining != alg.Limit-int64(i)-1 {
			t.Fatalf("decision %d after the window: %+v, %v; want admitted with Remaining %d", i, res, err, alg.Limit-int64(i)-1)
		}
		if got := records(); got != want {
			t.Fatalf("after decision %d: %d records, want %d (at most 1,000 removed per call)", i, got, want)
		}
	}
}

// A log's members are its running total modulo 2^52, so once the total
// wraps, a new record can share its member with an expired record not yet
// removed. The expired records go first, so the new one survives. The key
// is written by hand in the state a wrapped total leaves: the total is 5
// (modulo 2^52), and the one expired record's member is 5.
func TestNewRecordMeetsAnExpiredMember(t *testing.T) {
	ctx := context.Background()
	for name, addr := range map[string]string{"redis": redistest.Standalone(t).Addr, "miniredis": miniredis.RunT(t).Addr()} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, addr)
			s := storeredis.New(c, storeredis.WithClientTime())
			alg := algorithms.SlidingLog{Limit: 1, Window: time.Second}
			start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			key := testKey(t)
			old := float64(start.UnixMicro())
			if err := c.ZAdd(ctx, s.Key(key, alg),
				redis.Z{Score: -1 - 5, Member: "T"}, redis.Z{Score: -1 - old, Member: "L"}, redis.Z{Score: old, Member: "5"}).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Del(ctx, s.Key(key, alg)) })
			if res, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(2*time.Second), 1); err != nil || !res.Allowed {
				t.Fatalf("after the record expired: %+v, %v; want admitted", res, err)
			}
			res, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(2500*time.Millisecond), 1)
			if err != nil || res.Allowed || res.RetryAfter != 500*time.Millisecond {
				t.Fatalf("500ms later: %+v, %v; want denied for 500ms", res, err)
			}
		})
	}
}

// ring returns big-endian 8-byte integers: a compact log's header, or slots.
func ring(v ...uint64) string {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return string(b)
}
