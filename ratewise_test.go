package ratewise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

func TestNewRejectsBadInput(t *testing.T) {
	s := storememory.New()
	tests := []struct {
		name  string
		store store.Store
		alg   algorithms.Algorithm
		want  error
	}{
		{"nil store", nil, algorithms.FixedWindow{Limit: 1, Window: time.Second}, ratewise.ErrInvalidConfig},
		{"nil algorithm", s, nil, algorithms.ErrInvalidAlgorithm},
		{"limit 0", s, algorithms.FixedWindow{Limit: 0, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{"limit -3", s, algorithms.SlidingLog{Limit: -3, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{
			"capacity 0",
			s,
			algorithms.TokenBucket{Capacity: 0, Refill: algorithms.PerSecond(1)},
			algorithms.ErrInvalidAlgorithm,
		},
		{"window 0", s, algorithms.FixedWindow{Limit: 1}, algorithms.ErrInvalidAlgorithm},
		{"window -1m", s, algorithms.SlidingLog{Limit: 1, Window: -time.Minute}, algorithms.ErrInvalidAlgorithm},
		{"period 0", s, algorithms.GCRA{Rate: algorithms.Rate{Count: 1}, Burst: 1}, algorithms.ErrInvalidAlgorithm},
		{
			"period -1s",
			s,
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.Rate{Count: 1, Period: -time.Second}},
			algorithms.ErrInvalidAlgorithm,
		},
		{"burst 0", s, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 0}, algorithms.ErrInvalidAlgorithm},
		{"sub-windows 0", s, algorithms.SlidingWindow{Limit: 1, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{
			"sub-windows under 1ms",
			s,
			algorithms.SlidingWindow{Limit: 1, Window: time.Second, SubWindows: 2000},
			algorithms.ErrInvalidAlgorithm,
		},
		{"too large", s, algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1 << 40}, algorithms.ErrInvalidAlgorithm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ratewise.New(tt.store, tt.alg)
			if !errors.Is(err, tt.want) || l != nil {
				t.Fatalf("New: limiter %v, error %v; want nil and %v", l, err, tt.want)
			}
		})
	}
}

func TestCallsRejectBadInput(t *testing.T) {
	ctx := context.Background()
	l, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 5})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"n 0", func() error { _, err := l.AllowN(ctx, "k", 0); return err }, algorithms.ErrInvalidCost},
		{"n -1", func() error { _, err := l.AllowN(ctx, "k", -1); return err }, algorithms.ErrInvalidCost},
		{
			"n above the limit",
			func() error { _, err := l.AllowN(ctx, "k", 6); return err },
			algorithms.ErrCostExceedsLimit,
		},
		{"empty key Allow", func() error { _, err := l.Allow(ctx, ""); return err }, ratewise.ErrEmptyKey},
		{"empty key AllowN", func() error { _, err := l.AllowN(ctx, "", 1); return err }, ratewise.ErrEmptyKey},
		{"empty key Peek", func() error { _, err := l.PeekN(ctx, "", 1); return err }, ratewise.ErrEmptyKey},
		{"empty key Reset", func() error { return l.Reset(ctx, "") }, ratewise.ErrEmptyKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	// None of the rejected calls consumed anything.
	if res, err := l.PeekN(ctx, "k", 1); err != nil || res.Remaining != 5 {
		t.Fatalf("Peek after rejected calls: %+v, %v; want Remaining 5", res, err)
	}
	// The limit itself is a valid cost.
	if res, err := l.AllowN(ctx, "k", 5); err != nil || !res.Allowed {
		t.Fatalf("AllowN(limit): %+v, %v; want admitted", res, err)
	}
}

func TestErrorMessagesNameTheValue(t *testing.T) {
	_, err := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: -3, Window: time.Second})
	if got, want := err.Error(), "ratewise: invalid algorithm: limit must be > 0, got -3"; got != want {
		t.Fatalf("error %q, want %q", got, want)
	}
}

func TestWithNamespaceSeparatesLimiters(t *testing.T) {
	ctx := context.Background()
	s := storememory.New()
	alg := algorithms.FixedWindow{Limit: 1, Window: time.Minute}
	login, _ := ratewise.New(s, alg, ratewise.WithNamespace("login"))
	api, _ := ratewise.New(s, alg, ratewise.WithNamespace("api"))
	shared, _ := ratewise.New(s, alg, ratewise.WithNamespace("login"))
	// "alice" in the namespace "login" is the store key "login:alice".
	bare, _ := ratewise.New(s, alg)
	if _, err := ratewise.New(s, alg, ratewise.WithNamespace("a:b")); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Fatalf(`namespace "a:b": got %v, want ErrInvalidConfig`, err)
	}
	if res, _ := login.Allow(ctx, "alice"); !res.Allowed {
		t.Fatal("first login denied")
	}
	if res, _ := api.Allow(ctx, "alice"); !res.Allowed {
		t.Fatal("api limiter saw the login limiter's count")
	}
	if res, _ := shared.Allow(ctx, "alice"); res.Allowed {
		t.Fatal("two limiters with the same namespace did not share the count")
	}
	if res, _ := bare.Allow(ctx, "login:alice"); res.Allowed {
		t.Fatal(`"alice" in the namespace "login" is not stored as "login:alice"`)
	}
}

// A limit chosen per key is checked as New checks the limiter's own: an
// invalid one is its parameter's error, not a decision.
func TestWithTiersChecksTheLimit(t *testing.T) {
	ctx := context.Background()
	l, err := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: 5, Window: time.Minute},
		ratewise.WithTiers(func(context.Context, string) (algorithms.Algorithm, error) {
			return algorithms.FixedWindow{Limit: 0, Window: time.Minute}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Allow(ctx, "k"); !errors.Is(err, algorithms.ErrInvalidAlgorithm) || res.Allowed {
		t.Fatalf("Allow under an invalid per-key limit: %+v, %v; want ErrInvalidAlgorithm", res, err)
	}
	if _, err := l.Wait(ctx, "k"); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		t.Fatalf("Wait under an invalid per-key limit: %v; want ErrInvalidAlgorithm", err)
	}
}

// A tier's algorithm is checked on every call but the ones whose algorithm
// is the last that passed: one that fails after one that passed still
// fails, and every other call still decides under its own tier.
func TestWithTiersChecksEachNewLimit(t *testing.T) {
	ctx := context.Background()
	tiers := map[string]algorithms.Algorithm{
		"good":  algorithms.FixedWindow{Limit: 2, Window: time.Minute},
		"bad":   algorithms.FixedWindow{Limit: 0, Window: time.Minute},
		"other": algorithms.FixedWindow{Limit: 3, Window: time.Minute},
	}
	l, err := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: 5, Window: time.Minute},
		ratewise.WithClock(fixedClock{time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}),
		ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
			return tiers[key], nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"good", "bad", "good", "good", "bad", "other", "bad"} {
		res, err := l.Allow(ctx, key)
		if key == "bad" {
			if !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
				t.Fatalf("Allow(%q) = %+v, %v; want ErrInvalidAlgorithm", key, res, err)
			}
			continue
		}
		if err != nil || res.Limit != tiers[key].(algorithms.FixedWindow).Limit {
			t.Fatalf("Allow(%q) = %+v, %v; want a decision under %v", key, res, err, tiers[key])
		}
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }
