package ratewise_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []ratewise.DecisionEvent
}

func (r *recorder) ObserveDecision(_ context.Context, e ratewise.DecisionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) all() []ratewise.DecisionEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ratewise.DecisionEvent(nil), r.events...)
}

// An admission, a denial and a peek each reach the observer with the
// algorithm, the outcome and the caller's key, without the namespace.
func TestObserverHearsEveryDecision(t *testing.T) {
	ctx := context.Background()
	alg := algorithms.SlidingLog{Limit: 2, Window: time.Minute}
	rec := &recorder{}
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	l, err := ratewise.New(
		storememory.New(),
		alg,
		ratewise.WithObserver(rec.ObserveDecision),
		ratewise.WithClock(clock),
		ratewise.WithNamespace("api"),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AllowN(ctx, "alice", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.PeekN(ctx, "alice", 1); err != nil {
		t.Fatal(err)
	}
	events := rec.all()
	if got, want := len(events), 3; got != want {
		t.Fatalf("events: got %d, want %d: %+v", got, want, events)
	}
	for i, tt := range []struct {
		name      string
		allowed   bool
		cost      int64
		peek      bool
		remaining int64
	}{
		{"admission", true, 2, false, 0},
		{"denial", false, 1, false, 0},
		{"peek", false, 1, true, 0},
	} {
		e := events[i]
		if e.Stack || e.Algorithm != alg || e.Binding != 0 || e.Key != "alice" || e.Err != nil {
			t.Errorf("%s: %+v, want a limiter's decision by %v on alice without error", tt.name, e, alg)
		}
		if e.Result.Allowed != tt.allowed || e.Cost != tt.cost || e.Peek != tt.peek ||
			e.Result.Remaining != tt.remaining {
			t.Errorf(
				"%s: allowed %v, cost %d, peek %v, remaining %d; want %v, %d, %v, %d",
				tt.name,
				e.Result.Allowed,
				e.Cost,
				e.Peek,
				e.Result.Remaining,
				tt.allowed,
				tt.cost,
				tt.peek,
				tt.remaining,
			)
		}
		if e.StoreLatency < 0 {
			t.Errorf("%s: negative store latency %v", tt.name, e.StoreLatency)
		}
	}
	if !events[1].Result.At.Equal(clock.Now()) || events[1].Result.RetryAfter != time.Minute {
		t.Errorf("denial's Result: %+v, want the store's, RetryAfter 1m", events[1].Result)
	}
}

// slowStore fails every decision with err after delay.
type slowStore struct {
	store.Store // nil: only Decide and Reset are called
	delay       time.Duration
	err         error
}

func (s slowStore) Decide(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	int64,
) (algorithms.Result, error) {
	time.Sleep(s.delay)
	return algorithms.Result{}, s.err
}

func (s slowStore) Reset(context.Context, store.Key, algorithms.Algorithm) error { return s.err }

// A store failure reaches the observer as an error with the time the store
// took, not as a denial.
func TestObserverHearsStoreErrors(t *testing.T) {
	storeErr := fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	rec := &recorder{}
	l, err := ratewise.New(
		slowStore{delay: 5 * time.Millisecond, err: storeErr},
		algorithms.FixedWindow{Limit: 1, Window: time.Second},
		ratewise.WithObserver(rec.ObserveDecision),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(context.Background(), "k"); !errors.Is(err, storeErr) {
		t.Fatalf("Allow: got %v, want the store's error", err)
	}
	events := rec.all()
	if got, want := len(events), 1; got != want {
		t.Fatalf("events: got %d, want %d", got, want)
	}
	e := events[0]
	if !errors.Is(e.Err, store.ErrUnavailable) || e.Result != (ratewise.Result{}) {
		t.Fatalf("event %+v: want the store's error, not allowed, no Result", e)
	}
	if e.StoreLatency < 5*time.Millisecond {
		t.Fatalf("store latency: got %v, want at least the store's 5ms", e.StoreLatency)
	}
}

// Input rejected before the store is asked is not a decision.
func TestObserverSkipsInvalidInput(t *testing.T) {
	rec := &recorder{}
	l, err := ratewise.New(
		storememory.New(),
		algorithms.FixedWindow{Limit: 1, Window: time.Second},
		ratewise.WithObserver(rec.ObserveDecision),
	)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = l.Allow(context.Background(), "")
	_, _ = l.AllowN(context.Background(), "k", 2)
	if events := rec.all(); len(events) != 0 {
		t.Fatalf("events for invalid input: %+v", events)
	}
}

// A Stack reports the binding limit: its index, its algorithm and its Result.
func TestObserverStackBinding(t *testing.T) {
	ctx := context.Background()
	algs := []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 5, Window: time.Second},
		algorithms.SlidingLog{Limit: 2, Window: time.Hour},
	}
	rec := &recorder{}
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	set, err := ratewise.NewStack(
		storememory.New(),
		algs,
		ratewise.WithObserver(rec.ObserveDecision),
		ratewise.WithClock(clock),
	)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := set.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	events := rec.all()
	if got, want := len(events), 3; got != want {
		t.Fatalf("events: got %d, want %d", got, want)
	}
	for i, allowed := range []bool{true, true, false} {
		e := events[i]
		if !e.Stack || e.Binding != 1 || e.Algorithm != algs[1] || e.Result.Allowed != allowed {
			t.Errorf("decision %d: %+v, want the set's binding limit 1 (%v), allowed %v", i, e, algs[1], allowed)
		}
	}
	if got, want := events[2].Result.RetryAfter, time.Hour; got != want {
		t.Errorf("denial's RetryAfter: got %v, want the binding limit's %v", got, want)
	}
}

// A booking (Reserve, and Wait with an algorithm that books) is a decision.
func TestObserverHearsBookings(t *testing.T) {
	rec := &recorder{}
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 1}
	l, err := ratewise.New(storememory.New(), alg, ratewise.WithObserver(rec.ObserveDecision))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReserveN(context.Background(), "k", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	events := rec.all()
	if len(events) != 1 || events[0].Algorithm != alg || !events[0].Result.Allowed || events[0].Cost != 1 {
		t.Fatalf("events: %+v, want one admitted booking", events)
	}
}

// Without an observer, a Limiter allocates no more than its store does, and
// an observer that keeps nothing adds no allocation either.
func TestNoObserverAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates")
	}
	ctx := context.Background()
	// An interface value, as the Limiter holds it: passing a GCRA to the
	// store would box it on every call.
	var alg algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerSecond(1_000_000), Burst: 1_000_000}
	s := storememory.New()
	l, err := ratewise.New(s, alg)
	if err != nil {
		t.Fatal(err)
	}
	observed, err := ratewise.New(s, alg, ratewise.WithObserver(nopObserver{}.ObserveDecision))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	storeAllocs := testing.AllocsPerRun(1000, func() { _, _ = s.Decide(ctx, store.Key{Name: "store"}, alg, now, 1) })
	if got := testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "limiter") }); got != storeAllocs {
		t.Fatalf("allocations per Allow without an observer: got %v, want the store's own %v", got, storeAllocs)
	}
	// Nor does the event escape to the heap on its way to an observer.
	if got := testing.AllocsPerRun(1000, func() { _, _ = observed.Allow(ctx, "observed") }); got != storeAllocs {
		t.Fatalf("allocations per Allow with an observer: got %v, want the store's own %v", got, storeAllocs)
	}
}

type nopObserver struct{}

func (nopObserver) ObserveDecision(context.Context, ratewise.DecisionEvent) {}

// BenchmarkObserver compares a decision without an observer and with one
// that does nothing: the difference is what observing costs.
func BenchmarkObserver(b *testing.B) {
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1_000_000_000), Burst: 1_000_000}
	for _, bm := range []struct {
		name string
		opts []ratewise.Option
	}{
		{"observer=none", nil},
		{"observer=nop", []ratewise.Option{ratewise.WithObserver(nopObserver{}.ObserveDecision)}},
	} {
		l, err := ratewise.New(storememory.New(), alg, bm.opts...)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.Run("alg=gcra/store=memory/keys=1/"+bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Allow(ctx, "k"); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("alg=gcra/store=memory/keys=1/parallel/"+bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Allow(ctx, "k"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
