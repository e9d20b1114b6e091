package lease_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newFleet returns instances wrappers (or, with leased false, the bare
// store for each) on one store, made by mk with the fleet's clock.
func newFleet(
	t *testing.T,
	alg algorithms.Algorithm,
	instances int,
	leased bool,
	mk func(*ratewisetest.Clock) inner,
) *fleet {
	t.Helper()
	clk := ratewisetest.NewClock(start)
	f := &fleet{
		alg:     alg,
		clk:     clk,
		st:      &counting{inner: mk(clk)},
		key:     key,
		callers: 4,
		spikes:  2000,
		spike:   int(burstOf(alg) / 4),
	}
	for range instances {
		if !leased {
			f.ins = append(f.ins, f.st)
			continue
		}
		w, err := lease.Wrap(f.st, lease.Policy{Instances: instances, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		f.ins = append(f.ins, w)
		t.Cleanup(func() { _ = w.Close(context.Background()) })
	}
	return f
}

// close ends every instance's leases, giving back what they hold.
func (f *fleet) close(t *testing.T) {
	t.Helper()
	for _, in := range f.ins {
		if w, ok := in.(*lease.Store); ok {
			if err := w.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func burstOf(alg algorithms.Algorithm) int64 {
	switch a := alg.(type) {
	case algorithms.GCRA:
		return a.Burst
	case algorithms.TokenBucket:
		return a.Capacity
	case algorithms.FixedWindow:
		return a.Limit
	}
	return 1
}

func memory(clk *ratewisetest.Clock) inner { return storememory.New(storememory.WithClock(clk)) }

type scenario struct {
	name string
	alg  algorithms.Algorithm
	step time.Duration
}

var scenarios = []scenario{
	// T = 10µs, a whole number of µs: every unit's window is exact.
	{"gcra", algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 2000}, 50 * time.Microsecond},
	// T = 100/7 µs: windows err inwards by a µs.
	{"token_bucket", algorithms.TokenBucket{Capacity: 1500, Refill: algorithms.PerSecond(70_000)}, 37 * time.Microsecond},
	{"fixed_window", algorithms.FixedWindow{Limit: 4000, Window: 50 * time.Millisecond}, 50 * time.Microsecond},
}

// TestFleetNeverOverAdmits runs 1 and 4 instances of 4 callers each on one
// key of one memory store, leasing, through phases of saturation and
// quiet, and checks every span of their admissions, sorted by Result.At,
// against the algorithm's bound; then the same demand with every request
// decided by the store, and reports the under-admission and round trips.
func TestFleetNeverOverAdmits(t *testing.T) {
	for _, sc := range scenarios {
		for _, instances := range []int{1, 4} {
			t.Run(sc.name+"/instances="+string(rune('0'+instances)), func(t *testing.T) {
				for seed := uint64(1); seed <= seeds(2); seed++ {
					leased := newFleet(t, sc.alg, instances, true, memory)
					leased.run(t, seed, sc.step, phases)
					leased.close(t)
					if msg := check(sc.alg, leased.admissions); msg != "" {
						t.Fatalf("seed %d, leased: %s", seed, msg)
					}
					direct := newFleet(t, sc.alg, instances, false, memory)
					direct.run(t, seed, sc.step, phases)
					if msg := check(sc.alg, direct.admissions); msg != "" {
						t.Fatalf("seed %d, direct: %s", seed, msg)
					}
					l, d := int64(len(leased.admissions)), int64(len(direct.admissions))
					deficit := d - l
					// The core's simulation bounds it by the units lost and
					// held (internal/lease, design.md section 8): under 1.1%
					// there. Allow 3% for concurrent callers.
					if float64(deficit) > 0.03*float64(d) {
						t.Fatalf("seed %d: leased fleet admitted %d, direct-only %d: under-admission %d over 3%%", seed, l, d, deficit)
					}
					t.Logf(
						"seed %d: %d requests; admitted leased %d, direct-only %d: under-admission %d (%.2f%%); round trips "+
							"leased %d, direct-only %d (%.1f×)",
						seed,
						leased.requests,
						l,
						d,
						deficit,
						100*float64(deficit)/float64(d),
						leased.trips(),
						direct.trips(),
						float64(direct.trips())/float64(leased.trips()),
					)
				}
			})
		}
	}
}

// TestWindowRuleBroken makes the store lie to the wrappers on purpose, so
// that they spend leased units after the units' windows close (a bucket's
// unit up to a burst's span late; a fixed window's in the next window), and
// expects the check to find a span over the bound. With a quiet stretch
// after saturation and spikes of a whole burst, late units meet a bucket
// that refilled and that one instance takes at once.
func TestWindowRuleBroken(t *testing.T) {
	quiet := []phase{{100 * time.Millisecond, 1.6, false}, {200 * time.Millisecond, 0.2, false}}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			// A fixed window's booking a window later; a bucket's full
			// again a quarter of a burst's span (Burst × T) sooner.
			p := algo.ParamsOf(sc.alg)
			lie, run := p.Window, []phase{{200 * time.Millisecond, 1.6, false}}
			if _, ok := sc.alg.(algorithms.FixedWindow); !ok {
				run = quiet
				lie = time.Duration(burstOf(sc.alg)) * p.Window / time.Duration(p.Limit) / 4
			}
			// Whether a run meets a refilled bucket with late units depends
			// on how its goroutines are scheduled (a token bucket's run
			// misses about one time in three): seeds run until one is
			// caught, at most 12.
			caught := 0
			for seed := uint64(1); seed <= 12 && caught == 0; seed++ {
				f := newFleet(t, sc.alg, 4, true, memory)
				f.st.lie = lie
				f.spikes, f.spike = 500, -int(burstOf(sc.alg))
				f.run(t, seed, sc.step, run)
				f.close(t)
				if f.st.lieSeen.Load() == 0 {
					t.Fatalf("seed %d: no booking was lied to", seed)
				}
				msg := check(sc.alg, f.admissions)
				t.Logf(
					"seed %d: %d admissions, %d bookings (the lie told to the bucket's every one, to the fixed window's second)",
					seed,
					len(f.admissions),
					f.st.lieSeen.Load(),
				)
				if msg != "" {
					caught++
					t.Logf("seed %d, window rule broken on purpose: %s", seed, msg)
				}
			}
			if caught == 0 {
				t.Fatal("units spent after their windows never exceeded the bound")
			}
		})
	}
}
