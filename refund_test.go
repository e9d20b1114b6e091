package ratewise_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

var refundStart = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func TestRefundRejects(t *testing.T) {
	ctx := context.Background()
	l, _ := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 2, Window: time.Minute})
	res, _ := l.Allow(ctx, "k")
	if _, err := l.Refund(ctx, "k", ratewise.Result{}, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
		t.Errorf("a zero Result: %v, want ErrNotAdmitted", err)
	}
	if _, err := l.Refund(ctx, "", res, 1); !errors.Is(err, ratewise.ErrEmptyKey) {
		t.Errorf("an empty key: %v", err)
	}
	if _, err := l.Refund(ctx, "k", res, -1); !errors.Is(err, ratewise.ErrInvalidCost) {
		t.Errorf("n -1: %v", err)
	}
	hidden, _ := ratewise.New(onlyStore{storememory.New()}, algorithms.SlidingLog{Limit: 2, Window: time.Minute})
	if _, err := hidden.Refund(ctx, "k", res, 1); !errors.Is(err, ratewise.ErrUnsupported) {
		t.Errorf("a store that cannot refund: %v, want ErrUnsupported", err)
	}
}

// Bookings queue; cancelling the last gives its turn back, cancelling one
// with bookings behind it gives nothing back, since their turns are set, and
// cancelling again does nothing.
func TestReservations(t *testing.T) {
	ctx := context.Background()
	clock := ratewisetest.NewClock(refundStart)
	l, _ := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, ratewise.WithClock(clock))
	reserve := func(want time.Duration) *ratewise.Reservation {
		t.Helper()
		r, err := l.Reserve(ctx, "k", 10*time.Second)
		if err != nil || !r.OK() || r.Delay() != want {
			t.Fatalf("Reserve: %+v, %v; want a delay of %v", r, err, want)
		}
		return r
	}
	r1 := reserve(0)
	if _, err := r1.Cancel(ctx); err != nil { // its turn has come: it may have acted
		t.Fatal(err)
	}
	r2 := reserve(time.Second)
	r3 := reserve(2 * time.Second)
	if !r3.Result().At.Equal(refundStart.Add(2 * time.Second)) {
		t.Fatalf("a booking's At is %v, want its turn", r3.Result().At)
	}
	if _, err := r3.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	r4 := reserve(2 * time.Second) // r3's turn, given back
	if _, err := r2.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	reserve(3 * time.Second) // r2's turn stays taken: r4 is booked behind it
	if _, err := r4.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := r4.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	reserve(4 * time.Second) // r4 was not the last: nothing came back, once or twice

	if r, err := l.Reserve(ctx, "k", time.Second); err != nil || r.OK() || r.Result().RetryAfter != 5*time.Second {
		t.Fatalf("a booking 5s away with 1s to wait: %+v, %v; want not booked, RetryAfter the 5s to its turn", r, err)
	}
	if res, _ := l.Peek(ctx, "k"); res.RetryAfter != 5*time.Second {
		t.Fatalf("the refused booking charged: %+v", res)
	}

	log, _ := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 1, Window: time.Second})
	if _, err := log.Reserve(ctx, "k", time.Second); !errors.Is(err, ratewise.ErrUnsupported) {
		t.Fatalf("a sliding log booking: %v, want ErrUnsupported", err)
	}
}

// A waiter whose context ends before its turn hands the turn back: the
// next booking gets it.
func TestWaitGivesBackItsTurn(t *testing.T) {
	clock := ratewisetest.NewClock(refundStart)
	l, _ := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1}, ratewise.WithClock(cancelling{clock}))
	l.Allow(context.Background(), "k")
	if _, err := l.Wait(context.Background(), "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	r, err := l.Reserve(context.Background(), "k", 2*time.Hour)
	if err != nil || !r.OK() || r.Delay() != time.Hour {
		t.Fatalf("after the cancelled wait: %+v, %v; want the turn an hour away", r, err)
	}
}

// cancelling is a clock whose sleeps end as if their context had.
type cancelling struct{ *ratewisetest.Clock }

func (cancelling) Sleep(context.Context, time.Duration) error { return context.Canceled }

// A Group checks a user's and a tenant's limit on their own keys; a denial
// by either charges neither.
func TestGroup(t *testing.T) {
	ctx := context.Background()
	s := storememory.New()
	clock := ratewisetest.NewClock(refundStart)
	user, _ := ratewise.New(s, algorithms.SlidingLog{Limit: 2, Window: time.Minute}, ratewise.WithClock(clock), ratewise.WithNamespace("user"))
	tenant, _ := ratewise.New(s, algorithms.FixedWindow{Limit: 3, Window: time.Minute}, ratewise.WithClock(clock), ratewise.WithNamespace("tenant"))
	g, err := ratewise.NewGroup(user, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "ann", "bob"} {
		if res, err := g.Allow(ctx, u, "acme"); err != nil || !res.Allowed {
			t.Fatalf("%s: %+v, %v", u, res, err)
		}
	}
	res, _ := g.Allow(ctx, "cat", "acme")
	if res.Allowed || res.Binding != 1 || !res.Results[0].Allowed {
		t.Fatalf("a new user of a full tenant: %+v, want denied by the tenant", res)
	}
	if got, _ := user.Peek(ctx, "cat"); got.Remaining != 2 {
		t.Fatalf("the tenant's denial charged the user: %+v", got)
	}
	if _, err := g.Allow(ctx, "cat"); !errors.Is(err, ratewise.ErrInvalidGroup) {
		t.Fatalf("one key for two limiters: %v", err)
	}
	if _, err := ratewise.NewGroup(user, nil); !errors.Is(err, ratewise.ErrInvalidGroup) {
		t.Fatalf("a nil limiter: %v", err)
	}
	hidden, _ := ratewise.New(onlyStore{s}, algorithms.FixedWindow{Limit: 3, Window: time.Minute})
	if _, err := ratewise.NewGroup(user, hidden); !errors.Is(err, ratewise.ErrUnsupported) {
		t.Fatalf("a store that cannot refund: %v", err)
	}
}

// When another instance takes the tenant's last unit between the Group's
// peek and its charge, the user's charge is given back in full.
func TestGroupRefundsOnARace(t *testing.T) {
	ctx := context.Background()
	mem := storememory.New()
	var raced atomic.Int32
	// Another request takes all of the tenant first, once.
	s := &onCharge{Store: mem, key: "tenant:acme", do: func(ctx context.Context, alg algorithms.Algorithm, now time.Time) {
		if raced.CompareAndSwap(0, 1) {
			mem.Decide(ctx, "tenant:acme", alg, now, alg.MaxCost())
		}
	}}
	clock := ratewisetest.NewClock(refundStart)
	user, _ := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2}, ratewise.WithClock(clock), ratewise.WithNamespace("user"))
	tenant, _ := ratewise.New(s, algorithms.FixedWindow{Limit: 1, Window: time.Minute}, ratewise.WithClock(clock), ratewise.WithNamespace("tenant"))
	g, _ := ratewise.NewGroup(user, tenant)
	res, err := g.Allow(ctx, "ann", "acme")
	if err != nil || res.Allowed || res.Binding != 1 {
		t.Fatalf("%+v, %v; want denied by the tenant", res, err)
	}
	if raced.Load() != 1 {
		t.Fatal("the race did not happen")
	}
	if got, _ := user.Peek(ctx, "ann"); got.Remaining != 2 || got.ResetAfter != 0 {
		t.Fatalf("after the race the user has %+v, want the charge given back in full", got)
	}
}

// onCharge is a store that runs do before every charge of key, and
// refunds as the store it wraps does.
type onCharge struct {
	store.Store
	key string
	do  func(ctx context.Context, alg algorithms.Algorithm, now time.Time)
}

func (o *onCharge) Decide(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error) {
	if key == o.key && cost > 0 {
		o.do(ctx, alg, now)
	}
	return o.Store.Decide(ctx, key, alg, now, cost)
}

func (o *onCharge) Refund(ctx context.Context, key string, alg algorithms.Algorithm, now, at time.Time, n int64) (algorithms.Result, error) {
	return o.Store.(store.Refunder).Refund(ctx, key, alg, now, at, n)
}

// A charge made with AllowWith is refunded with RefundWith, under its own
// algorithm's state.
func TestRefundWith(t *testing.T) {
	ctx := context.Background()
	l, _ := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: 5, Window: time.Minute})
	hourly := algorithms.FixedWindow{Limit: 100, Window: time.Hour}
	l.AllowN(ctx, "k", 2)
	res, _ := l.AllowWith(ctx, "k", hourly, 30)
	after, err := l.RefundWith(ctx, "k", hourly, res, 30)
	if err != nil || after.Remaining != 100 {
		t.Fatalf("RefundWith: %+v, %v; want the hourly limit whole again", after, err)
	}
	if got, _ := l.Peek(ctx, "k"); got.Remaining != 3 {
		t.Fatalf("the per-minute limit after a refund of the hourly one: %+v, want 3 left", got)
	}
	if _, err := l.RefundWith(ctx, "k", nil, res, 1); !errors.Is(err, ratewise.ErrNilAlgorithm) {
		t.Fatalf("RefundWith a nil algorithm: %v", err)
	}
}

// A Group whose context ends between its charges still gives back what it
// charged.
func TestGroupRefundsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The context ends as the tenant is charged.
	s := &onCharge{Store: storememory.New(), key: "tenant:acme", do: func(context.Context, algorithms.Algorithm, time.Time) { cancel() }}
	user, _ := ratewise.New(s, algorithms.SlidingLog{Limit: 5, Window: time.Minute}, ratewise.WithNamespace("user"))
	tenant, _ := ratewise.New(s, algorithms.SlidingLog{Limit: 5, Window: time.Minute}, ratewise.WithNamespace("tenant"))
	g, _ := ratewise.NewGroup(user, tenant)
	if _, err := g.Allow(ctx, "ann", "acme"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got, _ := user.Peek(context.Background(), "ann"); got.Remaining != 5 {
		t.Fatalf("the user's charge stayed after the context ended: %+v", got)
	}
}
