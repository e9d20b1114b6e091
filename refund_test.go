package ratewise_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
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
	if _, err := l.Refund(ctx, "k", res, -1); !errors.Is(err, algorithms.ErrInvalidCost) {
		t.Errorf("n -1: %v", err)
	}
	hidden, _ := ratewise.New(onlyStore{storememory.New()}, algorithms.SlidingLog{Limit: 2, Window: time.Minute})
	if _, err := hidden.Refund(ctx, "k", res, 1); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("a store that cannot refund: %v, want ErrUnsupported", err)
	}
}

// Bookings queue; cancelling the last gives its turn back, cancelling one
// with bookings behind it gives nothing back, since their turns are set, and
// cancelling again does nothing.
func TestReservations(t *testing.T) {
	ctx := context.Background()
	clock := ratewisetest.NewClock(refundStart)
	l, _ := ratewise.New(
		storememory.New(),
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		ratewise.WithClock(clock),
	)
	reserve := func(want time.Duration) *ratewise.Reservation {
		t.Helper()
		r, err := l.ReserveN(ctx, "k", 1, 10*time.Second)
		if err != nil || !r.Result().Allowed || r.Delay() != want {
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

	if r, err := l.ReserveN(ctx, "k", 1, time.Second); err != nil || r.Result().Allowed ||
		r.Result().RetryAfter != 5*time.Second {
		t.Fatalf("a booking 5s away with 1s to wait: %+v, %v; want not booked, RetryAfter the 5s to its turn", r, err)
	}
	if res, _ := l.PeekN(ctx, "k", 1); res.RetryAfter != 5*time.Second {
		t.Fatalf("the refused booking charged: %+v", res)
	}

	log, _ := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 1, Window: time.Second})
	if _, err := log.ReserveN(ctx, "k", 1, time.Second); !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("a sliding log booking: %v, want ErrUnsupported", err)
	}
}

// A waiter whose context ends before its turn hands the turn back: the
// next booking gets it.
func TestWaitGivesBackItsTurn(t *testing.T) {
	clock := ratewisetest.NewClock(refundStart)
	l, _ := ratewise.New(
		storememory.New(),
		algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1},
		ratewise.WithClock(cancelling{clock}),
	)
	l.Allow(context.Background(), "k")
	if _, err := l.Wait(context.Background(), "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	r, err := l.ReserveN(context.Background(), "k", 1, 2*time.Hour)
	if err != nil || !r.Result().Allowed || r.Delay() != time.Hour {
		t.Fatalf("after the cancelled wait: %+v, %v; want the turn an hour away", r, err)
	}
}

// cancelling is a clock whose sleeps end as if their context had.
type cancelling struct{ *ratewisetest.Clock }

func (cancelling) Sleep(context.Context, time.Duration) error { return context.Canceled }

// A MultiKey checks a user's and a tenant's limit on their own keys; a denial
// by either charges neither.
func TestMultiKey(t *testing.T) {
	ctx := context.Background()
	s := storememory.New()
	clock := ratewisetest.NewClock(refundStart)
	user, _ := ratewise.New(
		s,
		algorithms.SlidingLog{Limit: 2, Window: time.Minute},
		ratewise.WithClock(clock),
		ratewise.WithNamespace("user"),
	)
	tenant, _ := ratewise.New(
		s,
		algorithms.FixedWindow{Limit: 3, Window: time.Minute},
		ratewise.WithClock(clock),
		ratewise.WithNamespace("tenant"),
	)
	g, err := ratewise.NewMultiKey(user, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"ann", "ann", "bob"} {
		if res, err := g.AllowN(ctx, []string{u, "acme"}, 1); err != nil || !res.Allowed {
			t.Fatalf("%s: %+v, %v", u, res, err)
		}
	}
	res, _ := g.AllowN(ctx, []string{"cat", "acme"}, 1)
	if res.Allowed || res.Binding != 1 || !res.Results[0].Allowed {
		t.Fatalf("a new user of a full tenant: %+v, want denied by the tenant", res)
	}
	if got, _ := user.PeekN(ctx, "cat", 1); got.Remaining != 2 {
		t.Fatalf("the tenant's denial charged the user: %+v", got)
	}
	if _, err := g.AllowN(ctx, []string{"cat"}, 1); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Fatalf("one key for two limiters: %v", err)
	}
	if _, err := ratewise.NewMultiKey(user, nil); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Fatalf("a nil limiter: %v", err)
	}
}

// When another instance takes the tenant's last unit between the MultiKey's
// peek and its charge, the user's charge is given back in full.
func TestMultiKeyRefundsOnARace(t *testing.T) {
	ctx := context.Background()
	mem := storememory.New()
	var raced atomic.Int32
	// Another request takes all of the tenant first, once.
	s := &onCharge{
		Store: mem,
		key:   "tenant:acme",
		do: func(ctx context.Context, alg algorithms.Algorithm, now time.Time) {
			if raced.CompareAndSwap(0, 1) {
				mem.Decide(ctx, store.Key{Name: "tenant:acme"}, alg, now, algo.MaxCost(alg))
			}
		},
	}
	clock := ratewisetest.NewClock(refundStart)
	user, _ := ratewise.New(
		s,
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
		ratewise.WithClock(clock),
		ratewise.WithNamespace("user"),
	)
	tenant, _ := ratewise.New(
		s,
		algorithms.FixedWindow{Limit: 1, Window: time.Minute},
		ratewise.WithClock(clock),
		ratewise.WithNamespace("tenant"),
	)
	g, _ := ratewise.NewMultiKey(user, tenant)
	res, err := g.AllowN(ctx, []string{"ann", "acme"}, 1)
	if err != nil || res.Allowed || res.Binding != 1 {
		t.Fatalf("%+v, %v; want denied by the tenant", res, err)
	}
	if raced.Load() != 1 {
		t.Fatal("the race did not happen")
	}
	if got, _ := user.PeekN(ctx, "ann", 1); got.Remaining != 2 || got.ResetAfter != 0 {
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

func (o *onCharge) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	key := sk.String()
	if key == o.key && cost > 0 {
		o.do(ctx, alg, now)
	}
	return o.Store.Decide(ctx, store.Key{Name: key}, alg, now, cost)
}

func (o *onCharge) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	key := sk.String()
	return o.Store.Refund(ctx, store.Key{Name: key}, alg, now, at, n)
}

// A refund goes into the state its admission charged, named by its
// Result, whatever the key's limit is by then: a key charged on a
// per-minute tier and moved to a per-hour one refunds into the minute, so
// the hour never gets back what it was never charged. (Resolving the
// algorithm anew at refund time, a per-hour limit of 5 admitted 6.)
func TestRefundIntoTheChargedState(t *testing.T) {
	ctx := context.Background()
	clock := ratewisetest.NewClock(refundStart)
	minute := algorithms.FixedWindow{Limit: 5, Window: time.Minute}
	hour := algorithms.FixedWindow{Limit: 5, Window: time.Hour}
	tier := map[string]algorithms.Algorithm{}
	l, _ := ratewise.New(storememory.New(), minute, ratewise.WithClock(clock),
		ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) { return tier[key], nil }))
	charged, err := l.Allow(ctx, "k") // on the per-minute tier
	if err != nil || !charged.Allowed {
		t.Fatalf("%+v, %v", charged, err)
	}
	if alg, cost := charged.Charged(); alg != minute || cost != 1 {
		t.Fatalf("the admission says it charged %v, %d; want %v, 1", alg, cost, minute)
	}
	tier["k"] = hour
	admitted := 0
	for range 5 {
		if res, _ := l.Allow(ctx, "k"); res.Allowed {
			admitted++
		}
	}
	after, err := l.Refund(ctx, "k", charged, 1)
	if err != nil || after.Limit != 5 || after.Remaining != 5 {
		t.Fatalf(
			"refund of the per-minute charge after the move: %+v, %v; want the minute's state, full again",
			after,
			err,
		)
	}
	for range 5 {
		if res, _ := l.Allow(ctx, "k"); res.Allowed {
			admitted++
		}
	}
	if admitted != 5 {
		t.Fatalf("the per-hour limit of 5 admitted %d within the hour", admitted)
	}

	// A charge made with AllowWith is refunded the same way.
	l.AllowN(ctx, "w", 2) // per hour, as tier has it for no key: the minute
	res, _ := l.AllowWith(ctx, "w", hour, 3)
	if after, err := l.Refund(ctx, "w", res, 3); err != nil || after.Remaining != 5 || after.Limit != 5 {
		t.Fatalf("refund of an AllowWith charge: %+v, %v; want the per-hour state whole again", after, err)
	}
	if got, _ := l.PeekN(ctx, "w", 1); got.Remaining != 3 {
		t.Fatalf("the per-minute limit after the per-hour refund: %+v, want 3 left", got)
	}
}

// Only what an admission charged comes back: not a Peek's Result, which
// charged nothing, nor a denial's, nor more than the admission's cost.
func TestRefundOnlyWhatWasCharged(t *testing.T) {
	ctx := context.Background()
	l, _ := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 5, Window: time.Minute})
	l.AllowN(ctx, "k", 4)
	peeked, _ := l.PeekN(ctx, "k", 1)
	if _, err := l.Refund(ctx, "k", peeked, 1); !errors.Is(err, ratewise.ErrNotAdmitted) {
		t.Fatalf("a refund of a Peek's Result: %v, want ErrNotAdmitted", err)
	}
	denied, _ := l.AllowN(ctx, "k", 2)
	if _, err := l.Refund(ctx, "k", denied, 1); denied.Allowed || !errors.Is(err, ratewise.ErrNotAdmitted) {
		t.Fatalf("a refund of a denial %+v: %v, want ErrNotAdmitted", denied, err)
	}
	one, _ := l.Allow(ctx, "k")
	if _, err := l.Refund(ctx, "k", one, 2); !errors.Is(err, algorithms.ErrInvalidCost) {
		t.Fatalf("a refund of 2 of an admission of 1: %v, want ErrInvalidCost", err)
	}
	if got, _ := l.PeekN(ctx, "k", 1); got.Remaining != 0 {
		t.Fatalf("after the refused refunds: %+v, want nothing back", got)
	}
}

// A Stack's admission comes back to every limit, each into the state it
// charged; a MultiKey's rollback and a cancelled booking, likewise, into the
// states they charged, whatever the key's tier by then.
func TestRefundThroughStacksMultiKeysAndBookings(t *testing.T) {
	ctx := context.Background()
	clock := ratewisetest.NewClock(refundStart)
	mem := storememory.New()
	perSecond := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 3}
	perHour := algorithms.SlidingLog{Limit: 10, Window: time.Hour}
	set, _ := ratewise.NewStack(mem, []algorithms.Algorithm{perSecond, perHour}, ratewise.WithClock(clock))
	admitted, err := set.AllowN(ctx, "k", 2)
	if err != nil || !admitted.Allowed {
		t.Fatalf("%+v, %v", admitted, err)
	}
	after, err := set.Refund(ctx, "k", admitted, 2)
	if err != nil || after.Results[0].Remaining != 3 || after.Results[1].Remaining != 10 {
		t.Fatalf("a set's refund: %+v, %v; want both limits whole again", after, err)
	}
	denied, _ := set.AllowN(ctx, "k", 3)
	set.AllowN(ctx, "k", 3)
	denied, _ = set.AllowN(ctx, "k", 3)
	if _, err := set.Refund(ctx, "k", denied, 1); denied.Allowed || !errors.Is(err, ratewise.ErrNotAdmitted) {
		t.Fatalf("a set's refund of a denial %+v: %v, want ErrNotAdmitted", denied, err)
	}

	// A booking whose key moves to another tier before it is cancelled
	// gives its turn back to the state it booked.
	tier := map[string]algorithms.Algorithm{}
	l, _ := ratewise.New(mem, perSecond, ratewise.WithClock(clock), ratewise.WithNamespace("b"),
		ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) { return tier[key], nil }))
	l.AllowN(ctx, "k", 3)
	r, err := l.ReserveN(ctx, "k", 1, time.Minute)
	if err != nil || !r.Result().Allowed || r.Delay() != time.Second {
		t.Fatalf("a booking: %+v, %v", r, err)
	}
	tier["k"] = algorithms.GCRA{Rate: algorithms.PerMinute(1), Burst: 3}
	if _, err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	delete(tier, "k")
	if got, _ := l.PeekN(ctx, "k", 1); got.RetryAfter != time.Second {
		t.Fatalf("after the cancel: %+v, want the booked turn back (1s to wait, not 2s)", got)
	}
}

// A MultiKey whose context ends between its charges still gives back what it
// charged.
func TestMultiKeyRefundsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The context ends as the tenant is charged.
	s := &onCharge{
		Store: storememory.New(),
		key:   "tenant:acme",
		do:    func(context.Context, algorithms.Algorithm, time.Time) { cancel() },
	}
	user, _ := ratewise.New(s, algorithms.SlidingLog{Limit: 5, Window: time.Minute}, ratewise.WithNamespace("user"))
	tenant, _ := ratewise.New(s, algorithms.SlidingLog{Limit: 5, Window: time.Minute}, ratewise.WithNamespace("tenant"))
	g, _ := ratewise.NewMultiKey(user, tenant)
	if _, err := g.AllowN(ctx, []string{"ann", "acme"}, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if got, _ := user.PeekN(context.Background(), "ann", 1); got.Remaining != 5 {
		t.Fatalf("the user's charge stayed after the context ended: %+v", got)
	}
}
