package ratewise_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// When several limits deny, the binding one is the one to wait longest for,
// and the set's RetryAfter is its wait; when the set admits, the binding
// limit is the one with the least left.
func TestStackBinding(t *testing.T) {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC))
	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 1, Window: time.Minute},
		algorithms.SlidingLog{Limit: 2, Window: time.Hour},
	}, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := set.Allow(ctx, "k")
	if !res.Allowed || res.Binding != 0 || res.Results[0].Remaining != 0 || res.Results[1].Remaining != 1 {
		t.Fatalf("first: %+v, want admitted with the fixed window binding", res)
	}
	res, _ = set.Allow(ctx, "k")
	if res.Allowed || res.Binding != 0 || res.RetryAfter != 30*time.Second || !res.Results[1].Allowed ||
		res.Results[1].Remaining != 1 {
		t.Fatalf("second: %+v, want denied by the fixed window for 30s, the log uncharged", res)
	}
	clock.Advance(30 * time.Second)
	if res, _ = set.Allow(ctx, "k"); !res.Allowed || res.Binding != 0 {
		t.Fatalf("in the next minute: %+v, want admitted", res)
	}
	res, _ = set.Allow(ctx, "k")
	if res.Allowed || res.Binding != 1 || res.RetryAfter != time.Hour-30*time.Second ||
		res.Results[0].RetryAfter != time.Minute {
		t.Fatalf("both denying: %+v, want the log binding, a wait of 59m30s", res)
	}

	// Admitted, the binding limit is the one with the least left, wherever
	// it stands in the set.
	reversed, _ := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
		algorithms.SlidingLog{Limit: 2, Window: time.Hour},
		algorithms.FixedWindow{Limit: 1, Window: time.Minute},
	}, ratewise.WithClock(clock))
	if res, _ := reversed.Allow(ctx, "k"); !res.Allowed || res.Binding != 1 {
		t.Fatalf("reversed: %+v, want admitted with the fixed window, second, binding", res)
	}
}

func TestNewStackRejects(t *testing.T) {
	s := storememory.New()
	gcra := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20}
	if _, err := ratewise.NewStack(
		s, []algorithms.Algorithm{gcra, algorithms.GCRA{Rate: algorithms.PerSecond(5), Burst: 5}},
	); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		t.Errorf("two GCRAs per second: %v, want ErrInvalidAlgorithm", err)
	}
	if _, err := ratewise.NewStack(s, nil); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Errorf("no algorithms: %v", err)
	}
	if _, err := ratewise.NewStack(s, []algorithms.Algorithm{gcra, algorithms.FixedWindow{}}); !errors.Is(
		err,
		algorithms.ErrInvalidAlgorithm,
	) {
		t.Errorf("an invalid algorithm: %v", err)
	}
	sets, err := ratewise.NewStack(onlyStore{s}, []algorithms.Algorithm{gcra})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sets.Allow(context.Background(), "k"); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("a store without sets: %v", err)
	}
}

// onlyStore is a store that decides but cannot decide sets or refund: it
// answers both with store.ErrUnsupported, as the store contract says.
type onlyStore struct{ store.Store }

func (onlyStore) DecideSet(
	context.Context,
	store.Key,
	[]algorithms.Algorithm,
	time.Time,
	int64,
) ([]algorithms.Result, error) {
	return nil, fmt.Errorf("%w: no sets here", store.ErrUnsupported)
}

func (onlyStore) Refund(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	time.Time,
	int64,
) (algorithms.Result, error) {
	return algorithms.Result{}, fmt.Errorf("%w: no refunds here", store.ErrUnsupported)
}
