package storeredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDialTimeoutIsUnavailable: a dial timeout of the client's own, under a
// context with no deadline, is the store being unavailable, not a context
// error; only the caller's context ending is one.
func TestDialTimeoutIsUnavailable(t *testing.T) {
	c := redis.NewClient(
		&redis.Options{Addr: redistest.FullListener(t), DialTimeout: 100 * time.Millisecond, MaxRetries: -1},
	)
	t.Cleanup(func() { c.Close() })
	s := storeredis.New(c)
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}

	res, err := s.Decide(context.Background(), store.Key{Name: "k"}, alg, time.Now(), 1)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) ||
		res.Allowed {
		t.Fatalf("dial timeout under context.Background(): %+v, %v; want ErrUnavailable and no context error", res, err)
	}
	if !strings.Contains(err.Error(), "i/o timeout") {
		t.Fatalf("error %q does not say it timed out", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := s.Decide(ctx, store.Key{Name: "k"}, alg, time.Now(), 1); !errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the caller's deadline passing during the dial: %v, want context.DeadlineExceeded", err)
	}
}
