package lease_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	core "github.com/ratewise/ratewise/internal/lease"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// inner is what the fleet needs of the store the wrappers share.
type inner = store.Store

// counting passes every call to a store and counts the round trips, the
// inspections aside. lie, when set, breaks the leases' window rule on
// purpose: it makes every booking's reply say the key is full again
// sooner than it is (a bucket), so that the wrapper spends units before
// their windows open, or that it was made a window later (a fixed window),
// so that it spends them after their window closes.
type counting struct {
	inner
	trips   atomic.Int64
	lie     time.Duration
	lieSeen atomic.Int64
}

func (c *counting) Decide(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	if cost > 0 {
		c.trips.Add(1)
	}
	return c.inner.Decide(ctx, key, alg, now, cost)
}

func (c *counting) Reserve(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	c.trips.Add(1)
	return c.inner.Reserve(ctx, key, alg, now, cost, maxWait)
}

func (c *counting) Lease(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	c.trips.Add(1)
	res, d, err := c.inner.Lease(ctx, key, alg, now, cost, maxWait)
	switch {
	case c.lie <= 0 || !res.Allowed:
	case algo.Reserves(alg):
		c.lieSeen.Add(1)
		res.ResetAfter -= min(c.lie, res.ResetAfter)
	case c.lieSeen.Add(1) == 2:
		// Only the second booking: one instance's units moved into the
		// next window meet that window's own, which the others fill.
		res.At = res.At.Add(c.lie)
	}
	return res, d, err
}

func (c *counting) Refund(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	c.trips.Add(1)
	return c.inner.Refund(ctx, key, alg, now, at, n)
}

// decider is what a fleet instance decides through: a wrapper, or the
// shared store itself for the direct-only fleet.
type decider interface {
	Decide(
		ctx context.Context,
		key store.Key,
		alg algorithms.Algorithm,
		now time.Time,
		cost int64,
	) (algorithms.Result, error)
}

// phase is a stretch of a run: the fleet's demand as a multiple of the
// key's rate, spread evenly over the instances or skewed to one.
type phase struct {
	until  time.Duration
	load   float64
	skewed bool
}

var phases = []phase{
	{150 * time.Millisecond, 1.6, false}, // saturated
	{250 * time.Millisecond, 0.3, false}, // quiet
	{400 * time.Millisecond, 2.0, true},  // saturated, one instance hot
	{450 * time.Millisecond, 0.8, true},  // just under the rate
	{500 * time.Millisecond, 3, false},   // heavily saturated
}

// fleet is instances sharing one store on one key, each running its
// callers concurrently at each step of a shared clock.
type fleet struct {
	alg     algorithms.Algorithm
	clk     *ratewisetest.Clock
	st      *counting   // the store, or the first instance's when each has its own
	stores  []*counting // every instance's store, when each has its own
	key     store.Key
	ins     []decider
	callers int // goroutines per instance per step
	spikes  int // one instance-step in spikes brings a spike
	spike   int // of up to this many requests; exactly -spike when negative

	mu         sync.Mutex
	admissions []int64 // every admission's Result.At, µs
	requests   int64
}

var key = store.Key{Namespace: "test", Name: "hot"}

// trips returns the fleet's round trips, inspections aside.
func (f *fleet) trips() int64 {
	if f.stores == nil {
		return f.st.trips.Load()
	}
	var n int64
	for _, c := range f.stores {
		n += c.trips.Load()
	}
	return n
}

// run steps the clock by step through phases, giving each instance a
// random demand each step, split over its callers, who decide at the
// step's time concurrently.
func (f *fleet) run(t *testing.T, seed uint64, step time.Duration, phases []phase) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	p := algo.ParamsOf(f.alg)
	perStep := float64(p.Limit) * float64(step) / float64(p.Window)
	start := f.clk.Now()
	var failed atomic.Pointer[string]
	for _, ph := range phases {
		for f.clk.Now().Sub(start) < ph.until {
			now := f.clk.Now()
			var wg sync.WaitGroup
			for i, in := range f.ins {
				w := 1 / float64(len(f.ins))
				if ph.skewed {
					w = float64(2*i+1) / float64(len(f.ins)*len(f.ins))
				}
				d := poisson(rng, ph.load*perStep*w)
				if f.spikes > 0 && rng.IntN(f.spikes) == 0 {
					if f.spike < 0 {
						d += -f.spike
					} else {
						d += rng.IntN(f.spike + 1)
					}
				}
				for c := range f.callers {
					m := d / f.callers
					if c < d%f.callers {
						m++
					}
					if m == 0 {
						continue
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						var got []int64
						for range m {
							res, err := in.Decide(context.Background(), f.key, f.alg, now, 1)
							if err != nil {
								msg := err.Error()
								failed.Store(&msg)
								return
							}
							if res.Allowed {
								if msg := inRange(res, f.alg, now); msg != "" {
									failed.Store(&msg)
									return
								}
								got = append(got, res.At.UnixMicro())
							}
						}
						f.mu.Lock()
						f.admissions = append(f.admissions, got...)
						f.requests += int64(m)
						f.mu.Unlock()
					}()
				}
			}
			wg.Wait()
			if msg := failed.Load(); msg != nil {
				t.Fatal(*msg)
			}
			f.clk.Advance(step)
		}
	}
}

// inRange checks an admission's Result as the contract's leased mode
// would: the limit, Remaining within it, no RetryAfter, At no earlier
// than now, and charged to alg at cost 1.
func inRange(res algorithms.Result, alg algorithms.Algorithm, now time.Time) string {
	limit := algo.MaxCost(alg)
	a, c := res.Charged()
	if res.Limit != limit || res.Remaining < 0 || res.Remaining > limit || res.RetryAfter != 0 || res.At.Before(now) ||
		a != alg ||
		c != 1 {
		return fmt.Sprintf("admission at %v out of range: %+v (charged %v at %d)", now, res, a, c)
	}
	return ""
}

// check sorts the admissions by their At and reports the first that makes
// some span hold more than alg allows (internal/lease's Excesses), or "".
func check(alg algorithms.Algorithm, admissions []int64) string {
	ats := slices.Clone(admissions)
	slices.Sort(ats)
	ex := core.Excesses(alg, ats)
	if len(ex) == 0 {
		return ""
	}
	e, limit := ex[0], algo.MaxCost(alg)
	if algo.FamilyOf(alg.Kind()) == algo.FamilyFixedWindow {
		w := algo.ParamsOf(alg).Window.Microseconds()
		return fmt.Sprintf("window starting at %d µs holds %.0f admissions, over the limit of %d", e.At/w*w, e.Used, limit)
	}
	return fmt.Sprintf("admission %d at %d µs: %.3f tokens used of a burst of %d", e.Index, e.At, e.Used, limit)
}

func poisson(rng *rand.Rand, mean float64) int {
	if mean <= 0 {
		return 0
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// seeds returns how many seeds a fleet check runs: n, or 1 under the race
// detector, which looks for data races and runs the fleets ten times slower.
func seeds(n uint64) uint64 {
	if race.Enabled {
		return 1
	}
	return n
}
