package storeredis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestEveryWriteAppliedOnce: each write the store makes (a decision, a
// set's, a booking, a refund, a booking's cancellation, a reset) has its
// reply lost once, after Redis ran it, and another client charges the key
// before go-redis, with its default settings or as a ClusterClient, sends
// the write again. The write returns without an error, and the key ends
// exactly as a twin key to which the write was applied once, with the same
// charge after it: the store gives every write of a client that resends an
// ID, so the resend gets the first outcome instead of charging, booking,
// refunding or resetting twice.
func TestEveryWriteAppliedOnce(t *testing.T) {
	gcra := algorithms.GCRA{Rate: algorithms.PerMinute(10), Burst: 10}
	partner := algorithms.SlidingLog{Limit: 20, Window: time.Hour}
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Now().Truncate(time.Microsecond))

	// A write: prepare runs on both keys through the store that loses
	// nothing; write is the one whose reply is lost; charge is the other
	// client's request in between.
	type write struct {
		name    string
		prepare func(l *ratewise.Limiter, key string) any
		write   func(l *ratewise.Limiter, s *ratewise.Stack, key string, prepared any) error
		charges bool // another client charges the key while the reply is lost
	}
	writes := []write{
		{"decision", nil, func(l *ratewise.Limiter, _ *ratewise.Stack, key string, _ any) error {
			_, err := l.AllowN(ctx, key, 2)
			return err
		}, true},
		{"set", nil, func(_ *ratewise.Limiter, s *ratewise.Stack, key string, _ any) error {
			_, err := s.AllowN(ctx, key, 2)
			return err
		}, true},
		{"booking", func(l *ratewise.Limiter, key string) any {
			l.AllowN(ctx, key, 10)
			return nil
		}, func(l *ratewise.Limiter, _ *ratewise.Stack, key string, _ any) error {
			r, err := l.ReserveN(ctx, key, 1, time.Minute)
			if err == nil && (!r.Result().Allowed || r.Delay() != 6*time.Second) {
				err = fmt.Errorf("booked %+v, want a turn 6s away", r.Result())
			}
			return err
		}, false},
		{"refund", func(l *ratewise.Limiter, key string) any {
			res, _ := l.AllowN(ctx, key, 3)
			return res
		}, func(l *ratewise.Limiter, _ *ratewise.Stack, key string, prepared any) error {
			_, err := l.Refund(ctx, key, prepared.(ratewise.Result), 2)
			return err
		}, true},
		{"cancel", func(l *ratewise.Limiter, key string) any {
			l.AllowN(ctx, key, 10)
			r, err := l.ReserveN(ctx, key, 1, time.Minute)
			if err != nil || !r.Result().Allowed {
				t.Fatalf("a booking to cancel: %+v, %v", r, err)
			}
			return r
		}, func(_ *ratewise.Limiter, _ *ratewise.Stack, _ string, prepared any) error {
			_, err := prepared.(*ratewise.Reservation).Cancel(ctx)
			return err
		}, false},
		{"reset", func(l *ratewise.Limiter, key string) any {
			l.AllowN(ctx, key, 5)
			return nil
		}, func(l *ratewise.Limiter, _ *ratewise.Stack, key string, _ any) error {
			return l.Reset(ctx, key)
		}, true},
	}

	targets := []struct {
		name string
		// clients returns go-redis's default client, or ClusterClient, on
		// the server with a Dropper in its dial, and one without.
		clients func(t *testing.T, d *redistest.Dropper) (lossy, plain redis.Scripter)
	}{
		{"client", func(t *testing.T, d *redistest.Dropper) (redis.Scripter, redis.Scripter) {
			addr := redistest.Standalone(t).Addr
			lossy := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.Dial})
			t.Cleanup(func() { lossy.Close() })
			return lossy, newClient(t, addr)
		}},
		{"cluster", func(t *testing.T, d *redistest.Dropper) (redis.Scripter, redis.Scripter) {
			addrs := redistest.SharedCluster(t).Addrs()
			lossy := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Dialer: d.Dial})
			plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
			t.Cleanup(func() { lossy.Close(); plain.Close() })
			return lossy, plain
		}},
	}
	// A store that coalesces (the default) records its decisions in the
	// state's value (writers' records); one that does not gives every write
	// a once key.
	for _, target := range targets {
		for _, coalescing := range []int{2, 0} {
			name := target.name + "/coalesced"
			if coalescing == 0 {
				name = target.name + "/alone"
			}
			t.Run(name, func(t *testing.T) {
				d := new(redistest.Dropper)
				lossyClient, plainClient := target.clients(t, d)
				opts := []storeredis.Option{
					storeredis.WithClientTime(),
					storeredis.WithCoalescing(coalescing),
					storeredis.WithDenyCache(0),
				}
				lossyStore, plainStore := storeredis.New(lossyClient, opts...), storeredis.New(plainClient, opts...)
				// A namespace of its own on every run, -count included.
				namespace := strings.ReplaceAll(testKey(t)+"."+ratewise.NewRequestID(), ":", ".")
				limiters := func(s *storeredis.Store) (*ratewise.Limiter, *ratewise.Stack, *ratewise.Limiter) {
					l, err := ratewise.New(s, gcra, ratewise.WithClock(clock), ratewise.WithNamespace(namespace))
					if err != nil {
						t.Fatal(err)
					}
					set, err := ratewise.NewStack(
						s,
						[]algorithms.Algorithm{gcra, partner},
						ratewise.WithClock(clock),
						ratewise.WithNamespace(namespace),
					)
					if err != nil {
						t.Fatal(err)
					}
					p, err := ratewise.New(s, partner, ratewise.WithClock(clock), ratewise.WithNamespace(namespace))
					if err != nil {
						t.Fatal(err)
					}
					return l, set, p
				}
				lossy, lossySet, _ := limiters(lossyStore)
				plain, plainSet, plainPartner := limiters(plainStore)
				for _, w := range writes {
					t.Run(w.name, func(t *testing.T) {
						key, twin, warm := w.name, w.name+"-twin", w.name+"-warm"
						var prepared, preparedTwin, preparedWarm any
						if w.prepare != nil {
							// A cancellation is the lossy limiter's own booking's.
							prepLimiter := plain
							if w.name == "cancel" {
								prepLimiter = lossy
							}
							prepared, preparedWarm = w.prepare(prepLimiter, key), w.prepare(prepLimiter, warm)
							preparedTwin = w.prepare(plain, twin)
						}
						// Once with nothing lost, on a key of its own.
						if err := w.write(lossy, lossySet, warm, preparedWarm); err != nil {
							t.Fatalf("the write on a key of its own: %v", err)
						}
						var onDrop func()
						if w.charges {
							onDrop = func() {
								if res, err := plain.Allow(ctx, key); err != nil || !res.Allowed {
									t.Errorf("the other client's request while the reply was lost: %+v, %v", res, err)
								}
							}
						}
						before := d.Dropped()
						d.Arm(onDrop, "evalsha", "eval")
						if err := w.write(lossy, lossySet, key, prepared); err != nil {
							t.Fatalf("the write whose reply was lost, sent again by go-redis: %v; want its first outcome", err)
						}
						if got := d.Dropped() - before; got != 1 {
							t.Fatalf("%d replies dropped, want 1", got)
						}
						if err := w.write(plain, plainSet, twin, preparedTwin); err != nil {
							t.Fatalf("the write on the twin: %v", err)
						}
						if w.charges {
							plain.Allow(ctx, twin)
						}
						for _, l := range []*ratewise.Limiter{plain, plainPartner} {
							got, err := l.PeekN(ctx, key, 1)
							want, werr := l.PeekN(ctx, twin, 1)
							if err != nil || werr != nil || got != want {
								t.Fatalf(
									"%s after the write with its reply lost: %+v (%v); the twin, written once: %+v (%v)",
									l.Algorithm(),
									got,
									err,
									want,
									werr,
								)
							}
						}
					})
				}
			})
		}
	}
}

// TestRecordedDecisionOnServerTime: on Redis's clock, the store's default,
// a coalesced decision whose reply is lost is sent again by go-redis after
// its backoff, and the resend returns the first outcome, decided at the
// time the first attempt read, which the record in the state's value
// keeps; the key is charged once, however many times another client
// charges it between the two.
func TestRecordedDecisionOnServerTime(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	d := new(redistest.Dropper)
	lossyClient := redis.NewClient(&redis.Options{
		Addr: addr, Dialer: d.Dial, MinRetryBackoff: 20 * time.Millisecond, MaxRetryBackoff: 20 * time.Millisecond,
	})
	t.Cleanup(func() { lossyClient.Close() })
	alg := algorithms.GCRA{Rate: algorithms.PerHour(100), Burst: 100}
	lossy, err := ratewise.New(storeredis.New(lossyClient, storeredis.WithWarnings(0, nil)), alg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ratewise.New(storeredis.New(newClient(t, addr), storeredis.WithWarnings(0, nil)), alg)
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(t) + ":" + ratewise.NewRequestID()
	if _, err := lossy.AllowN(ctx, key, 3); err != nil { // a state for the record to keep
		t.Fatal(err)
	}
	var between time.Time
	d.Arm(func() {
		res, err := other.AllowN(ctx, key, 5)
		if err != nil || !res.Allowed {
			t.Errorf("the other client's request while the reply was lost: %+v, %v", res, err)
		}
		between = res.At
	}, "evalsha", "eval")
	res, err := lossy.AllowN(ctx, key, 2)
	if err != nil {
		t.Fatalf("the decision whose reply was lost: %v; want its first outcome", err)
	}
	if d.Dropped() != 1 {
		t.Fatalf("%d replies dropped, want 1", d.Dropped())
	}
	// The first attempt ran before the other client's request: its outcome
	// is the one decided then, on the state before it.
	if !res.Allowed || res.Remaining != 95 || !res.At.Before(between) {
		t.Fatalf("the resend returned %+v; want the first attempt's outcome: 95 left, decided before %v", res, between)
	}
	peek, err := other.PeekN(ctx, key, 1)
	if err != nil || peek.Remaining != 90 {
		t.Fatalf("the key after: %+v, %v; want 3 + 5 + 2 charged once: 90 left", peek, err)
	}
}

// TestRecordsLiveUntilTheDeadline: with go-redis's default client, a
// recorded decision whose caller has no deadline keeps its key for as long
// as go-redis may resend it; one with a deadline keeps it no longer than
// that, and a call that reaches Redis after its deadline (delayed here in
// the network) is refused without effect, as store.ErrMaybeDecided, since
// an earlier attempt might have run.
func TestRecordsLiveUntilTheDeadline(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Standalone(t).Addr
	var delay atomic.Int64 // ns each write to Redis waits
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := new(net.Dialer).DialContext(ctx, network, addr)
		return slowConn{c, &delay}, err
	}
	client := redis.NewClient(&redis.Options{Addr: addr, Dialer: dial})
	t.Cleanup(func() { client.Close() })
	s := storeredis.New(client, storeredis.WithWarnings(0, nil))
	// A state that counts for a millisecond after each admission, and
	// admits ten at once.
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1000), Burst: 10}
	l, err := ratewise.New(s, alg)
	if err != nil {
		t.Fatal(err)
	}
	key := testKey(t) + ":" + ratewise.NewRequestID()
	ttl := func() time.Duration {
		d, err := client.PTTL(ctx, s.Key(key, alg)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if _, err := l.Allow(ctx, key); err != nil { // no deadline; and the store learns Redis's clock
		t.Fatal(err)
	}
	if d := ttl(); d < time.Minute {
		t.Fatalf("a key written without a deadline lives %v; want the resend horizon", d)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if res, err := l.Allow(short, key); err != nil || !res.Allowed {
		t.Fatalf("the second request: %+v, %v; want it admitted", res, err)
	}
	// No longer, and the millisecond every TTL adds (see ttl_ms in prelude.lua).
	if d := ttl(); d <= 0 || d > 201*time.Millisecond {
		t.Fatalf("a key written with a deadline 200ms away lives %v; want no longer", d)
	}

	other := "late:" + key
	late, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	delay.Store(int64(60 * time.Millisecond))
	_, err = l.Allow(late, other)
	delay.Store(0)
	if !errors.Is(err, store.ErrMaybeDecided) || !strings.Contains(err.Error(), "after its deadline") {
		t.Fatalf("a call that reached Redis after its deadline: %v; want it refused, as ErrMaybeDecided", err)
	}
	if n, err := client.Exists(ctx, s.Key(other, alg)).Result(); err != nil || n != 0 {
		t.Fatalf("the refused call left its key: %d, %v", n, err)
	}
}

// slowConn delays each write by what delay holds.
type slowConn struct {
	net.Conn
	delay *atomic.Int64
}

func (c slowConn) Write(p []byte) (int, error) {
	if d := c.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d)) // the network's delay, not a window's
	}
	return c.Conn.Write(p)
}
