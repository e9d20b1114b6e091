package lease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

func TestWrapRejects(t *testing.T) {
	mem := storememory.New()
	for _, tc := range []struct {
		name string
		s    store.Store
		p    lease.Policy
		want []error
	}{
		{"no instances", mem, lease.Policy{}, []error{lease.ErrCannotLease}},
		{"negative round trip", mem, lease.Policy{Instances: 1, RoundTrip: -time.Millisecond}, []error{lease.ErrCannotLease}},
		{"negative lifetime", mem, lease.Policy{Instances: 1, Lifetime: -1}, []error{lease.ErrCannotLease}},
		{"divisor below instances", mem, lease.Policy{Instances: 16, Divisor: 8}, []error{lease.ErrCannotLease}},
		{"negative min", mem, lease.Policy{Instances: 1, Min: -2}, []error{lease.ErrCannotLease}},
		{"negative max keys", mem, lease.Policy{Instances: 1, MaxKeys: -1}, []error{lease.ErrCannotLease}},
		{"own clock", ownClock{&counting{inner: mem}, nil}, lease.Policy{Instances: 1},
			[]error{lease.ErrCannotLease, store.ErrUnsupported}},
		{"a lease.Store", leased(t, mem), lease.Policy{Instances: 1}, []error{lease.ErrCannotLease, store.ErrUnsupported}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := lease.Wrap(tc.s, tc.p)
			if w != nil || err == nil {
				t.Fatalf("Wrap: %v, %v; want an error", w, err)
			}
			for _, want := range tc.want {
				if !errors.Is(err, want) {
					t.Fatalf("Wrap: %v, want it to wrap %v", err, want)
				}
			}
		})
	}
	if _, err := lease.Wrap(mem, lease.Policy{Instances: 4}); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
}

// leased returns s wrapped by lease.Wrap.
func leased(t *testing.T, s store.Store) *lease.Store {
	t.Helper()
	w, err := lease.Wrap(s, lease.Policy{Instances: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// hot drives one key of alg hard enough through w, on clk, that it leases,
// and returns the counting store under it.
func hot(t *testing.T, alg algorithms.Algorithm) (*lease.Store, *counting, *ratewisetest.Clock) {
	t.Helper()
	clk := ratewisetest.NewClock(start)
	c := &counting{inner: storememory.New(storememory.WithClock(clk))}
	w, err := lease.Wrap(c, lease.Policy{Instances: 1, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w, c, clk
}

// drive makes n decisions of cost 1 on key under alg through w, stepping
// clk by step after each, and returns how many were admitted.
func drive(
	t *testing.T,
	w store.Store,
	clk *ratewisetest.Clock,
	alg algorithms.Algorithm,
	n int,
	step time.Duration,
) int {
	t.Helper()
	admitted := 0
	for range n {
		res, err := w.Decide(context.Background(), key, alg, clk.Now(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			admitted++
		}
		clk.Advance(step)
	}
	return admitted
}

var gcra = algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 2000}

// TestLeasesCutRoundTrips: a saturated key decided through the wrapper
// takes fewer round trips than decisions.
func TestLeasesCutRoundTrips(t *testing.T) {
	w, c, clk := hot(t, gcra)
	drive(t, w, clk, gcra, 20000, 5*time.Microsecond) // twice the rate
	if trips := c.trips.Load(); trips > 20000/4 {
		t.Fatalf("%d round trips for 20000 decisions: leases do not cut them", trips)
	}
}

// TestPassesThrough: what cannot lease goes to the inner store, one round
// trip each, even on a key that leases.
func TestPassesThrough(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		alg  algorithms.Algorithm
		cost int64
	}{
		{"cost 2", ctx, gcra, 2},
		{"inspection", ctx, gcra, 0},
		{"peek", ctx, gcra, -1},
		{"request ID", ratewise.WithRequestID(ctx, "id-1"), gcra, 1},
		{"sliding log", ctx, algorithms.SlidingLog{Limit: 100000, Window: time.Second}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, clk := hot(t, gcra)
			drive(t, w, clk, gcra, 10000, 5*time.Microsecond)
			for range 10 {
				before := c.trips.Load()
				if _, err := w.Decide(tc.ctx, key, tc.alg, clk.Now(), tc.cost); err != nil {
					t.Fatal(err)
				}
				want := int64(1)
				if tc.cost <= 0 {
					want = 0 // the counting store does not count inspections
				}
				if got := c.trips.Load() - before; got != want {
					t.Fatalf("%d round trips, want %d", got, want)
				}
			}
		})
	}
}

// ownClock is a store deciding on a clock of its own, as Redis and
// PostgreSQL do by default: it ignores the now it is given, and says so.
type ownClock struct {
	*counting
	clk *ratewisetest.Clock
}

func (o ownClock) Capabilities() store.Capabilities {
	c := o.counting.Capabilities()
	c.OwnClock = true
	return c
}

// TestResetKeepsLeasedUnits: Reset puts back the state the instance's
// latest lease left (store.Store.Lease), so the units it spent stay charged and
// the key is not full, and ends the lease, giving back what it did not
// spend in one round trip: the key has at least the room it had before.
func TestResetKeepsLeasedUnits(t *testing.T) {
	w, c, clk := hot(t, gcra)
	drive(t, w, clk, gcra, 10000, 5*time.Microsecond)
	ctx := context.Background()
	before, err := c.inner.Decide(ctx, key, gcra, clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	trips := c.trips.Load()
	if err := w.Reset(ctx, key, gcra); err != nil {
		t.Fatal(err)
	}
	if got := c.trips.Load() - trips; got != 1 {
		t.Fatalf(
			"Reset of a key this instance leases made %d round trips besides the reset, want 1 (giving back its lease)",
			got,
		)
	}
	after, err := c.inner.Decide(ctx, key, gcra, clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Remaining < before.Remaining || after.Remaining >= gcra.Burst {
		t.Fatalf(
			"after Reset the store has %d of %d, before %d: want at least as much as before and less than the burst, "+
				"the lease's spent units charged",
			after.Remaining,
			gcra.Burst,
			before.Remaining,
		)
	}
	trips = c.trips.Load()
	if res, err := w.Decide(ctx, key, gcra, clk.Now(), 1); err != nil || !res.Allowed {
		t.Fatalf("after Reset: %+v, %v; want an admission", res, err)
	}
	if got := c.trips.Load() - trips; got != 1 {
		t.Fatalf("the decision after Reset took %d round trips, want 1 (no lease is left)", got)
	}
}

// TestLimiter: a Limiter over the wrapper admits, waits (store.Store.Reserve),
// refunds (store.Store.Refund) and decides stacks (store.Store.DecideSet).
func TestLimiter(t *testing.T) {
	ctx := context.Background()
	w, _, clk := hot(t, gcra)
	l, err := ratewise.New(w, gcra, ratewise.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	res, err := l.Allow(ctx, "k")
	if err != nil || !res.Allowed {
		t.Fatalf("Allow: %+v, %v", res, err)
	}
	if _, err := l.Refund(ctx, "k", res, 1); err != nil {
		t.Fatalf("Refund: %v", err)
	}
	if _, err := l.Wait(ctx, "k"); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	stack, err := ratewise.NewStack(
		w,
		[]algorithms.Algorithm{gcra, algorithms.FixedWindow{Limit: 10, Window: time.Second}},
		ratewise.WithClock(clk),
	)
	if err != nil {
		t.Fatalf("NewStack: %v", err)
	}
	if _, err := stack.Allow(ctx, "k"); err != nil {
		t.Fatalf("Stack: %v", err)
	}
}

// TestConcurrentCallers runs many goroutines on a few keys of one wrapper
// while the table evicts (MaxKeys 2) and Close runs at the end, for the
// race detector.
func TestConcurrentCallers(t *testing.T) {
	clk := ratewisetest.NewClock(start)
	c := &counting{inner: storememory.New(storememory.WithClock(clk))}
	w, err := lease.Wrap(c, lease.Policy{Instances: 2, MaxKeys: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	keys := []store.Key{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for i := range 3000 {
				if g == 0 && i%10 == 0 {
					clk.Advance(20 * time.Microsecond)
				}
				alg := algorithms.Algorithm(gcra)
				if i%3 == 0 {
					alg = algorithms.FixedWindow{Limit: 4000, Window: 50 * time.Millisecond}
				}
				if _, err = w.Decide(context.Background(), keys[(g+i)%len(keys)], alg, clk.Now(), 1); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestZeroTimeIsNow: the zero now is the system clock's time, as on every
// store (store.Store), even on a key that leases.
func TestZeroTimeIsNow(t *testing.T) {
	w, _, clk := hot(t, gcra)
	drive(t, w, clk, gcra, 10000, 5*time.Microsecond)
	before := time.Now()
	res, err := w.Decide(context.Background(), key, gcra, time.Time{}, 1)
	if err != nil || res.At.Before(before.Truncate(time.Microsecond)) {
		t.Fatalf("Decide at the zero time: %+v, %v; want a decision at or after %v", res, err, before)
	}
}

// TestWrapRefusesOwnClock: a store that says it decides on its own clock
// (store.Capabilities) is refused at Wrap, with ErrCannotLease.
func TestWrapRefusesOwnClock(t *testing.T) {
	w, err := lease.Wrap(ownClock{&counting{inner: storememory.New()}, nil}, lease.Policy{Instances: 1})
	if w != nil || !errors.Is(err, lease.ErrCannotLease) || !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("Wrap: %v, %v; want ErrCannotLease and store.ErrUnsupported", w, err)
	}
}
