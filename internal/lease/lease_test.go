package lease

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// TestResultsMatchDirect leases units on a key and spends them at times in
// their windows, while a second store, with the same history but no lease,
// decides the same units directly at the same times. A unit spent no later
// than its deadline is spent no later than its predecessor's X, so the
// direct decisions book the same X's, and the Results must agree: exactly
// when T is a whole number of µs, and within a unit of Remaining and a µs
// of ResetAfter otherwise.
func TestResultsMatchDirect(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 50},
		algorithms.TokenBucket{Capacity: 50, Refill: algorithms.PerSecond(70_000)},
	} {
		t.Run(alg.String(), func(t *testing.T) {
			ctx := context.Background()
			key := store.Key{Name: "k"}
			leased, direct := storememory.New(), storememory.New()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			// Drain 40 of the burst on both, so the units' windows are long.
			for _, st := range []*storememory.Store{leased, direct} {
				if res, err := st.Decide(ctx, key, alg, now, 40); err != nil || !res.Allowed {
					t.Fatalf("%+v, %v", res, err)
				}
			}
			const n = 8
			res, _, err := leased.Reserve(ctx, key, alg, now, n, time.Second)
			if err != nil || !res.Allowed {
				t.Fatalf("%+v, %v", res, err)
			}
			l, err := New(alg, now, n, res, Config{})
			if err != nil {
				t.Fatal(err)
			}
			exact, prev := l.exact, now
			for i := int64(0); i < n; i++ {
				e, d := l.Window(i)
				// Spend at the earliest, the deadline, or between.
				s := []time.Time{e, d, e.Add(d.Sub(e) / 2)}[i%3]
				if s.Before(prev) {
					s = prev // a clock never goes back
				}
				prev = s
				got, ok := l.Spend(s)
				if !ok || !got.Allowed {
					t.Fatalf("unit %d at %v in [%v, %v]: %+v, %v", i, s, e, d, got, ok)
				}
				want, err := direct.Decide(ctx, key, alg, s, 1)
				if err != nil || !want.Allowed {
					t.Fatalf("direct unit %d: %+v, %v", i, want, err)
				}
				if exact && got != want {
					t.Fatalf("unit %d at %v:\n lease  %+v\n direct %+v", i, s, got, want)
				}
				if !exact &&
					(got.Remaining > want.Remaining || want.Remaining-got.Remaining > 1 ||
						got.ResetAfter < want.ResetAfter || got.ResetAfter-want.ResetAfter > time.Microsecond ||
						!got.At.Equal(want.At)) {
					t.Fatalf("unit %d at %v:\n lease  %+v\n direct %+v", i, s, got, want)
				}
			}
			if _, ok := l.Spend(now.Add(time.Hour)); ok {
				t.Fatal("a spent lease decided")
			}
			if n, _ := l.End(now.Add(time.Hour)); n != 0 {
				t.Fatalf("a spent lease gives back %d", n)
			}
		})
	}
}

// TestNotYetAndExpired: before a unit's turn the lease denies with the
// wait until it; past its deadline a unit is skipped, and End gives back
// the units after the last one spent.
func TestNotYetAndExpired(t *testing.T) {
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1000), Burst: 10} // T = 1ms
	st := storememory.New()
	key := store.Key{Name: "k"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := st.Decide(ctx, key, alg, now, 10); err != nil {
		t.Fatal(err)
	}
	// TAT = now+10ms; units X = now+11..14ms, windows [X-10ms, X-1ms].
	res, delay, err := st.Reserve(ctx, key, alg, now, 4, time.Second)
	if err != nil || !res.Allowed || delay != 4*time.Millisecond {
		t.Fatalf("%+v, %v, %v", res, delay, err)
	}
	l, err := New(alg, now, 4, res, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][2]time.Duration{{1, 10}, {2, 11}, {3, 12}, {4, 13}} {
		e, d := l.Window(int64(i))
		if !e.Equal(now.Add(want[0]*time.Millisecond)) || !d.Equal(now.Add(want[1]*time.Millisecond)) {
			t.Fatalf(
				"unit %d: [%v, %v], want [%v, %v]",
				i,
				e.Sub(now),
				d.Sub(now),
				want[0]*time.Millisecond,
				want[1]*time.Millisecond,
			)
		}
	}
	got, ok := l.Spend(now)
	if !ok || got.Allowed || got.RetryAfter != time.Millisecond || got.ResetAfter != 14*time.Millisecond ||
		got.Remaining != 0 {
		t.Fatalf("before the first turn: %+v, %v", got, ok)
	}
	// At 10.5ms unit 0 has expired; unit 1 is spent.
	if got, ok := l.Spend(now.Add(10500 * time.Microsecond)); !ok || !got.Allowed {
		t.Fatalf("%+v, %v", got, ok)
	}
	if h := l.Held(now.Add(10500 * time.Microsecond)); h != 2 {
		t.Fatalf("held %d, want 2", h)
	}
	n, at := l.End(now.Add(11 * time.Millisecond))
	if st := l.Stats(); n != 2 || !at.Equal(res.At) || st != (Stats{Units: 4, Spent: 1, Skipped: 1, Tail: 2}) {
		t.Fatalf("End: %d, %v; %+v", n, at, st)
	}
	if _, ok := l.Spend(now.Add(11 * time.Millisecond)); ok {
		t.Fatal("an ended lease decided")
	}
}

func TestNewErrors(t *testing.T) {
	now := time.Unix(1e9, 0)
	ok := algorithms.Result{Allowed: true, Limit: 10}
	gcra := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10}
	for _, c := range []struct {
		alg  algorithms.Algorithm
		n    int64
		res  algorithms.Result
		cfg  Config
		want error
	}{
		{algorithms.SlidingLog{Limit: 10, Window: time.Second}, 1, ok, Config{}, ErrUnsupported},
		{nil, 1, ok, Config{}, ErrUnsupported},
		{gcra, 1, algorithms.Result{}, Config{}, ErrNotAdmitted},
		{gcra, 0, ok, Config{}, ErrInvalid},
		{gcra, 11, ok, Config{}, ErrInvalid},
		{gcra, 1, ok, Config{Shift: -1}, ErrInvalid},
	} {
		if _, err := New(c.alg, now, c.n, c.res, c.cfg); !errors.Is(err, c.want) {
			t.Errorf("New(%v, %d): %v, want %v", c.alg, c.n, err, c.want)
		}
	}
	if _, err := NewSizer(Policy{}); !errors.Is(err, ErrInvalidPolicy) || !errors.Is(err, ErrInvalid) {
		t.Errorf("NewSizer: %v", err)
	}
}
