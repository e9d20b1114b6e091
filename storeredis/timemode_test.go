package storeredis_test

import (
	"context"
	"errors"
	"github.com/ratewise/ratewise/internal/algo"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestServerTimeSharedUnderClockSkew: two app servers whose clocks differ by
// 5s either way share one limit in the default mode, because scripts read
// Redis's TIME: together they admit the limit once, and both are told the
// same wait. Deciding on their own clocks, they would be told waits 10s
// apart.
func TestServerTimeSharedUnderClockSkew(t *testing.T) {
	s := storeredis.New(newClient(t, redistest.Standalone(t).Addr))
	real := time.Now()
	for _, alg := range allAlgorithms {
		t.Run(alg.Kind().String(), func(t *testing.T) {
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
			ra, errA := a.PeekN(context.Background(), key, 1)
			rb, errB := b.PeekN(context.Background(), key, 1)
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			// Only the real time between the two calls separates them.
			if d := ra.RetryAfter - rb.RetryAfter; ra.RetryAfter <= 0 || d < 0 || d > time.Second {
				t.Fatalf(
					"RetryAfter %v for one server and %v for the other, want the same wait",
					ra.RetryAfter,
					rb.RetryAfter,
				)
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

// TestClientTimeNeverMeansServerTime: in client-time mode every time in
// range is the caller's, the Unix epoch included; no time selects Redis's
// clock: the zero time is the system clock's (store.Store), and a time out
// of range is an error, not Redis's clock either.
func TestClientTimeNeverMeansServerTime(t *testing.T) {
	s := storeredis.New(newClient(t, miniredis.RunT(t).Addr()), storeredis.WithClientTime())
	alg := algorithms.FixedWindow{Limit: 5, Window: time.Second}
	for _, at := range []time.Time{time.Unix(0, 0), time.UnixMicro(1), time.UnixMicro(algo.EnvelopeMaxUnixMicro)} {
		res, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, at, 1)
		if err != nil || !res.At.Equal(at) {
			t.Fatalf("decided at %v for a now of %v (%v)", res.At, at, err)
		}
	}
	before := time.Now().Truncate(time.Microsecond)
	if res, err := s.Decide(
		context.Background(), store.Key{Name: testKey(t) + ":zero"}, alg, time.Time{}, 1,
	); err != nil ||
		res.At.Before(before) ||
		res.At.After(time.Now()) {
		t.Fatalf("decided at %v for the zero now (%v), want the system clock's, from %v", res.At, err, before)
	}
	for _, at := range []time.Time{time.Unix(0, -1000)} {
		if _, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, at, 1); !errors.Is(
			err,
			algorithms.ErrInvalidTime,
		) {
			t.Fatalf("a now of %v: %v, want ErrInvalidTime", at, err)
		}
	}
}
