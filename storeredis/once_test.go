package storeredis_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// dropProxy forwards connections to a Redis server, and when armed, drops
// the reply to the next EVALSHA: it forwards the command, lets Redis run it,
// and closes the client's connection instead of passing the reply on, as a
// network that fails at the wrong moment does.
type dropProxy struct {
	ln      net.Listener
	target  string
	armed   atomic.Bool
	refuse  atomic.Bool  // after the drop, refuse connections
	evals   atomic.Int64 // EVALSHA commands forwarded
	dropped atomic.Int64 // replies dropped
	wg      sync.WaitGroup
}

func startDropProxy(t *testing.T, target string) *dropProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target}
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.pipe(c) })
		}
	})
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	return p
}

func (p *dropProxy) addr() string { return p.ln.Addr().String() }

func (p *dropProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	drop := make(chan struct{}, 1)
	p.wg.Go(func() { // client to server
		defer s.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				if bytes.Contains(bytes.ToLower(buf[:n]), []byte("evalsha")) {
					p.evals.Add(1)
					if p.armed.CompareAndSwap(true, false) {
						drop <- struct{}{}
					}
				}
				if _, err := s.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
	defer c.Close()
	buf := make([]byte, 64<<10)
	for { // server to client
		n, err := s.Read(buf)
		if n > 0 {
			select {
			case <-drop:
				p.dropped.Add(1)
				if p.refuse.Load() {
					p.ln.Close()
				}
				s.Close()
				return
			default:
			}
			if _, err := c.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// TestLostReplyChargesOnce: Redis runs a decision and its reply is lost.
// go-redis sends it again, and the store, which gives every write an ID
// when its client resends, gets the first outcome back rather than a second
// charge; without retries, the caller gets ErrMaybeDecided and can retry
// with an ID of its own.
func TestLostReplyChargesOnce(t *testing.T) {
	srv := redistest.Standalone(t)
	alg := algorithms.FixedWindow{Limit: 10, Window: time.Minute}
	now := time.Now()
	ctx := context.Background()

	// decideLost warms a connection up, then decides once on key with the
	// reply dropped, and returns the outcome and how much the key used.
	decideLost := func(
		t *testing.T, retries int, ctx context.Context, opts ...storeredis.Option,
	) (*dropProxy, *storeredis.Store, algorithms.Result, error) {
		p := startDropProxy(t, srv.Addr)
		c := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: retries, PoolSize: 1})
		t.Cleanup(func() { c.Close() })
		s := storeredis.New(c, append(opts, storeredis.WithClientTime(), storeredis.WithCoalescing(0))...)
		if _, err := s.Decide(context.Background(), store.Key{Name: testKey(t) + "-warm"}, alg, now, 1); err != nil {
			t.Fatal(err)
		}
		p.armed.Store(true)
		res, err := s.Decide(ctx, store.Key{Name: testKey(t)}, alg, now, 1)
		if p.dropped.Load() != 1 {
			t.Fatalf("the proxy dropped %d replies, want 1", p.dropped.Load())
		}
		return p, s, res, err
	}
	used := func(t *testing.T, s *storeredis.Store) int64 {
		t.Helper()
		res, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		return alg.Limit - res.Remaining
	}

	t.Run("go-redis retries, the store gives the ID", func(t *testing.T) {
		p, s, res, err := decideLost(t, 1, ctx)
		if err != nil || !res.Allowed || res.Remaining != alg.Limit-1 {
			t.Fatalf("Decide: %+v, %v; want the first outcome, Remaining %d", res, err, alg.Limit-1)
		}
		if evals, n := p.evals.Load(), used(t, s); n != 1 || evals != 3 {
			t.Fatalf(
				"one request with its reply lost used %d (with %d EVALSHAs, warm-up included); want 1: retried, charged once",
				n,
				evals,
			)
		}
	})

	t.Run("the caller retries with its ID", func(t *testing.T) {
		ctx := ratewise.WithRequestID(ctx, ratewise.NewRequestID())
		_, s, res, err := decideLost(t, -1, ctx)
		if !errors.Is(err, store.ErrMaybeDecided) || !errors.Is(err, store.ErrUnavailable) ||
			res != (algorithms.Result{}) {
			t.Fatalf(
				"Decide with its reply lost and no retries: %+v, %v; want ErrMaybeDecided and ErrUnavailable",
				res,
				err,
			)
		}
		t.Logf("the error: %v", err)
		again, err := s.Decide(ctx, store.Key{Name: testKey(t)}, alg, now.Add(time.Second), 1)
		if err != nil || !again.Allowed || again.Remaining != alg.Limit-1 ||
			!again.At.Equal(now.Truncate(time.Microsecond)) {
			t.Fatalf(
				"the retry with the request's ID: %+v, %v; want the first outcome (Remaining %d, At %v)",
				again,
				err,
				alg.Limit-1,
				now,
			)
		}
		if n := used(t, s); n != 1 {
			t.Fatalf("one request, retried by its caller, used %d; want 1", n)
		}
	})

	t.Run("a resend that cannot connect is still maybe decided", func(t *testing.T) {
		// go-redis returns its last attempt's error, a refused dial,
		// which says nothing of the first attempt, which ran.
		p := startDropProxy(t, srv.Addr)
		c := redis.NewClient(&redis.Options{Addr: p.addr(), MaxRetries: 1, PoolSize: 1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		s := storeredis.New(c, storeredis.WithClientTime(), storeredis.WithCoalescing(0))
		if _, err := s.Decide(ctx, store.Key{Name: testKey(t) + "-warm"}, alg, now, 1); err != nil {
			t.Fatal(err)
		}
		p.armed.Store(true)
		p.refuse.Store(true)
		_, err := s.Decide(ctx, store.Key{Name: testKey(t)}, alg, now, 1)
		if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, store.ErrMaybeDecided) {
			t.Fatalf(
				"Decide whose reply was lost and whose resend was refused: %v; want ErrUnavailable and ErrMaybeDecided",
				err,
			)
		}
		direct := storeredis.New(newClient(t, srv.Addr), storeredis.WithClientTime(), storeredis.WithCoalescing(0))
		if res, err := direct.Decide(ctx, store.Key{Name: testKey(t)}, alg, now, 0); err != nil ||
			res.Remaining != alg.Limit-1 {
			t.Fatalf("the key after it: %+v, %v; want the first attempt's charge", res, err)
		}
	})

	t.Run("nothing sent is not maybe decided", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens: every dial is refused
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		s := storeredis.New(c)
		_, err = s.Decide(ctx, store.Key{Name: testKey(t)}, alg, now, 1)
		if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrMaybeDecided) {
			t.Fatalf("Decide on a refused connection: %v; want ErrUnavailable without ErrMaybeDecided", err)
		}
	})
}

// TestRefundOnceKeyLifetime: a refund with a request ID keeps its once key
// as long as the charge it gives back could count, the algorithm's quota
// window (10s for 100 at 10 per second), so that a retry of the refund
// within it is not applied again, however soon the key's state goes.
func TestRefundOnceKeyLifetime(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: redistest.Standalone(t).Addr, MaxRetries: -1}) // sends once
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 100}
	s := storeredis.New(c)
	key, id := testKey(t), ratewise.NewRequestID()
	res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 5)
	if err != nil || !res.Allowed {
		t.Fatalf("the admission: %+v, %v", res, err)
	}
	if _, err := s.Refund(ratewise.WithRequestID(ctx, id), store.Key{Name: key}, alg, time.Time{}, res.At, 5); err != nil {
		t.Fatal(err)
	}
	window := algo.QuotaOf(alg).Window
	if ttl, err := c.PTTL(ctx, storeredis.RefundOnceKey(s, key, alg, id)).Result(); err != nil ||
		ttl < window-time.Second ||
		ttl > window+time.Millisecond {
		t.Fatalf("the refund's once key lives %v (%v), want the quota's window, %v", ttl, err, window)
	}
}

// TestOnceKeyLifetime: an admission with a request ID keeps its once key as
// long as what it charged counts, and with a client that resends at least
// as long as go-redis may send it again; a denial keeps none. It prints
// what a once key costs in Redis's memory.
func TestOnceKeyLifetime(t *testing.T) {
	addr := redistest.Standalone(t).Addr
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}) // sends once
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		algorithms.SlidingWindow{Limit: 1, Window: time.Minute, SubWindows: 6},
	} {
		s := storeredis.New(c)
		// A key as short as most, such as a user's ID.
		key, id := runID+":"+alg.Kind().String(), ratewise.NewRequestID()
		rctx := ratewise.WithRequestID(ctx, id)
		res, err := s.Decide(rctx, store.Key{Name: key}, alg, time.Time{}, 1)
		if err != nil || !res.Allowed {
			t.Fatalf("%s: %+v, %v", alg, res, err)
		}
		once := storeredis.OnceKey(s, key, alg, id)
		ttl, err := c.PTTL(ctx, once).Result()
		if err != nil || ttl <= 0 || ttl > res.ResetAfter+2*time.Millisecond ||
			ttl < res.ResetAfter-100*time.Millisecond {
			t.Fatalf(
				"%s: the once key lives %v (%v), want the admission's ResetAfter %v",
				alg,
				ttl,
				err,
				res.ResetAfter,
			)
		}
		bytes, err := c.MemoryUsage(ctx, once, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf(
			"%s: the once key %q takes %d bytes (MEMORY USAGE), for %v",
			alg,
			once,
			bytes,
			ttl.Round(time.Millisecond),
		)

		// go-redis's defaults (v9.23) resend for up to 3 × (6s for a
		// connection, 6 dials of 5s and their 5 waits of 100ms, 5s to
		// write, 5s to read, 1s of backoff): 142.5s.
		resending := storeredis.New(newClient(t, addr))
		key2, id2 := key+":resending", ratewise.NewRequestID()
		if _, err := resending.Decide(
			ratewise.WithRequestID(ctx, id2), store.Key{Name: key2}, alg, time.Time{}, 1,
		); err != nil {
			t.Fatal(err)
		}
		if ttl, err := c.PTTL(ctx, storeredis.OnceKey(resending, key2, alg, id2)).Result(); err != nil ||
			ttl < 142*time.Second ||
			ttl > 143500*time.Millisecond {
			t.Fatalf(
				"%s: with a client that resends, the once key lives %v (%v), want go-redis's 142.5s",
				alg,
				ttl,
				err,
			)
		}

		denyID := ratewise.NewRequestID()
		if res, err := s.Decide(ratewise.WithRequestID(ctx, denyID), store.Key{Name: key}, alg, time.Time{}, 1); err != nil ||
			res.Allowed {
			t.Fatalf("%s: a second request: %+v, %v; want a denial", alg, res, err)
		}
		if n, err := c.Exists(ctx, storeredis.OnceKey(s, key, alg, denyID)).Result(); err != nil || n != 0 {
			t.Fatalf("%s: a denial left a once key (%d, %v)", alg, n, err)
		}
	}
}

// BenchmarkRequestIDs measures what a request ID costs a decision on Redis,
// one caller at a time: without IDs (a client that sends once), with one
// the store makes per decision (a client that resends), and with one the
// caller gives.
func BenchmarkRequestIDs(b *testing.B) {
	addr := redistest.Standalone(b).Addr
	once := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	b.Cleanup(func() { once.Close() })
	c := newClient(b, addr)
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1000000), Burst: 1000}
	for _, bc := range []struct {
		name   string
		client *redis.Client
		ctx    func() context.Context
	}{
		{"none", once, context.Background},
		{"store", c, context.Background},
		{"caller", once, func() context.Context {
			return ratewise.WithRequestID(context.Background(), ratewise.NewRequestID())
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := storeredis.New(bc.client, storeredis.WithCoalescing(0), storeredis.WithDenyCache(0))
			key := "bench:" + runID + ":" + bc.name
			if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := s.Decide(bc.ctx(), store.Key{Name: key}, alg, time.Time{}, 1); err != nil {
					b.Fatal(err)
				}
			}
			// Redis's own time per script call, which the client's
			// round trip hides.
			stats, err := redisinfo.CommandStats(context.Background(), c)
			if err != nil {
				b.Fatal(err)
			}
			if st := stats["evalsha"]; st.Calls > 0 {
				b.ReportMetric(float64(st.Usec)/float64(st.Calls), "redis-µs/op")
			}
		})
	}
}
