package lease

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// clock is the simulation's clock, shared by the store and every instance.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// leasingStore is what the fleet uses of the store.
type leasingStore = store.Store

// admission is one admitted unit: when, by whom, and whether from a lease.
type admission struct {
	at    int64 // µs
	local bool
}

// sim runs instances that share one store on one key.
type sim struct {
	t      *testing.T
	alg    algorithms.Algorithm
	clk    *clock
	st     leasingStore
	key    store.Key
	leases bool // false: every request goes to the store
	shift  time.Duration
	slip   int64 // µs added to every deadline: breaks the rule on purpose
	policy Policy
	idle   time.Duration // a lease unused this long is ended
	spikes int           // one step in spikes brings an instance a spike
	spike  int64         // of up to this many requests
	seq    int
	ins    []*instance
	log    []admission

	// Counts over the run.
	requests, leased, spent, expired, returned, givenBack, direct, leasesTaken int64
	// store round trips, the measuring inspections aside, and those denied
	trips, denials int64
	maxHeld        int64
	// heldAtDenial is, per fixed window, the most units held in leases
	// when the store denied a request.
	heldAtDenial map[int64]int64
	wasteBound   int64 // sum over ended leases of units held at their end
}

type instance struct {
	lease    *Lease
	leaseID  string
	sizer    *Sizer
	ahead    time.Duration // the latest reply's ResetAfter
	aheadAt  time.Time
	lastWant time.Time
}

func newSim(t *testing.T, alg algorithms.Algorithm, instances int, leases bool, policy Policy) *sim {
	t.Helper()
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := &sim{
		t:            t,
		alg:          alg,
		clk:          clk,
		st:           storememory.New(storememory.WithClock(clk)),
		key:          store.Key{Name: "global"},
		leases:       leases,
		policy:       policy,
		idle:         2 * policy.RoundTrip,
		spikes:       2000,
		spike:        algo.MaxCost(alg) / 4,
		heldAtDenial: map[int64]int64{},
	}
	for range instances {
		sz, err := NewSizer(policy)
		if err != nil {
			t.Fatal(err)
		}
		s.ins = append(s.ins, &instance{sizer: sz})
	}
	if leases {
		s.shift = ShiftFor(alg, instances-1, algo.MaxCost(alg)/policy.Divisor)
	}
	return s
}

func (s *sim) ctxID() (context.Context, string) {
	s.seq++
	id := "lease-" + strconv.Itoa(s.seq)
	return requestid.With(context.Background(), id), id
}

// request runs one request of cost 1 from instance in at the clock's now.
func (s *sim) request(in *instance) {
	ctx := context.Background()
	now := s.clk.now
	s.requests++
	in.sizer.Observe(now, 1)
	in.lastWant = now
	for s.leases {
		if in.lease != nil {
			res, ok := in.lease.Spend(now)
			if ok {
				if res.Allowed {
					if s.slip == 0 {
						s.checkLocal(res, now)
					}
					s.log = append(s.log, admission{at: now.UnixMicro(), local: true})
				}
				return
			}
			s.end(in) // nothing left to spend
		}
		ahead := max(in.ahead-now.Sub(in.aheadAt), 0)
		n, maxWait := in.sizer.Size(s.alg, now, ahead, s.shift)
		if n < 1 {
			break
		}
		lctx, id := s.ctxID()
		var res algorithms.Result
		var err error
		s.trips++
		if algo.Reserves(s.alg) {
			res, _, err = s.st.Reserve(lctx, s.key, s.alg, now, n, maxWait)
		} else {
			res, err = s.st.Decide(lctx, s.key, s.alg, now, n)
		}
		if err != nil {
			s.t.Fatal(err)
		}
		in.ahead, in.aheadAt = res.ResetAfter, now
		if !res.Allowed {
			s.denials++
			break
		}
		l, err := New(s.alg, now, n, res, Config{Shift: s.shift})
		if err != nil {
			s.t.Fatal(err)
		}
		l.slip = s.slip
		in.lease, in.leaseID = l, id
		s.leased += n
		s.leasesTaken++
	}
	s.trips++
	res, err := s.st.Decide(ctx, s.key, s.alg, now, 1)
	if err != nil {
		s.t.Fatal(err)
	}
	in.ahead, in.aheadAt = res.ResetAfter, now
	if res.Allowed {
		s.direct++
		s.log = append(s.log, admission{at: res.At.UnixMicro()})
		return
	}
	s.denials++
	var held int64
	for _, in := range s.ins {
		if in.lease != nil {
			held += in.lease.Held(now)
		}
	}
	w := s.window(now.UnixMicro())
	s.heldAtDenial[w] = max(s.heldAtDenial[w], held)
}

// window returns the fixed window t is in.
func (s *sim) window(t int64) int64 { return t / algo.ParamsOf(s.alg).Window.Microseconds() }

// perWindow returns the admissions in each fixed window.
func (s *sim) perWindow() map[int64]int64 {
	m := map[int64]int64{}
	for _, a := range s.log {
		m[s.window(a.at)]++
	}
	return m
}

// checkLocal checks a local admission's Result is in range.
func (s *sim) checkLocal(res algorithms.Result, now time.Time) {
	limit := algo.MaxCost(s.alg)
	a, c := res.Charged()
	if !res.Allowed || res.Limit != limit || res.Remaining < 0 || res.Remaining > limit-1 || res.RetryAfter != 0 ||
		res.ResetAfter <= 0 ||
		!res.At.Equal(now) ||
		a != s.alg ||
		c != 1 {
		s.t.Fatalf("local admission at %v: %+v", now, res)
	}
}

// end ends in's lease and gives back what it did not spend.
func (s *sim) end(in *instance) {
	l := in.lease
	now := s.clk.now
	held := l.Held(now)
	s.wasteBound += held
	n, at := l.End(now)
	st := l.Stats()
	s.spent += st.Spent
	s.expired += st.Skipped
	in.lease = nil
	if n == 0 {
		return
	}
	s.returned += n
	// What comes back, measured as the change in an inspection's
	// ResetAfter (the simulation is single-threaded, so nothing runs in
	// between).
	before, err := s.st.Decide(context.Background(), s.key, s.alg, now, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	s.trips++
	res, err := s.st.Refund(requestid.With(context.Background(), in.leaseID), s.key, s.alg, now, at, n)
	if err != nil {
		s.t.Fatal(err)
	}
	s.givenBack += s.units(before, res)
}

// units returns the units an inspection before and after a refund differ
// by.
func (s *sim) units(before, after algorithms.Result) int64 {
	if algo.FamilyOf(s.alg.Kind()) != algo.FamilyBucket {
		return after.Remaining - before.Remaining
	}
	p := algo.ParamsOf(s.alg)
	d := (before.ResetAfter - after.ResetAfter).Microseconds()
	return int64(math.Round(float64(d) * float64(p.Limit) / float64(p.Window.Microseconds())))
}

// phase is a stretch of the run: the fleet's demand as a multiple of the
// key's rate, and how it is spread over instances.
type phase struct {
	until  time.Duration
	load   float64
	skewed bool
}

// run steps the clock by step until the last phase ends, giving each
// instance a random demand each step, and then ends every lease.
func (s *sim) run(seed uint64, step time.Duration, phases []phase) {
	rng := rand.New(rand.NewPCG(seed, 1))
	p := algo.ParamsOf(s.alg)
	perStep := float64(p.Limit) * float64(step) / float64(p.Window)
	start := s.clk.now
	order := make([]int, len(s.ins))
	for i := range order {
		order[i] = i
	}
	for _, ph := range phases {
		for s.clk.now.Sub(start) < ph.until {
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			for _, i := range order {
				in := s.ins[i]
				w := 1 / float64(len(s.ins))
				if ph.skewed {
					w = float64(2*i+1) / float64(len(s.ins)*len(s.ins))
				}
				d := poisson(rng, ph.load*perStep*w)
				if rng.IntN(s.spikes) == 0 {
					d += s.spikeSize(rng)
				}
				for range d {
					s.request(in)
				}
			}
			var held int64
			for _, in := range s.ins {
				if in.lease == nil {
					continue
				}
				fixed := algo.FamilyOf(s.alg.Kind()) == algo.FamilyFixedWindow
				if in.lease.Done(s.clk.now) || s.clk.now.Sub(in.lastWant) >= s.idle ||
					fixed && !s.clk.now.Add(step).Before(in.lease.ReturnBy()) {
					s.end(in)
					continue
				}
				held += in.lease.Held(s.clk.now)
			}
			s.maxHeld = max(s.maxHeld, held)
			s.clk.now = s.clk.now.Add(step)
		}
	}
	for _, in := range s.ins {
		if in.lease != nil {
			s.end(in)
		}
	}
}

// spikeSize returns a spike's size: up to spike requests, or exactly
// -spike when spike is negative.
func (s *sim) spikeSize(rng *rand.Rand) int {
	if s.spike < 0 {
		return int(-s.spike)
	}
	return rng.IntN(int(s.spike) + 1)
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

// check reports the first admission that makes some span hold more than
// the algorithm allows (Excesses), or "".
func (s *sim) check() string {
	ats := make([]int64, len(s.log))
	for i, a := range s.log {
		if i > 0 && a.at < ats[i-1] {
			return fmt.Sprintf("admission %d out of time order", i)
		}
		ats[i] = a.at
	}
	ex := Excesses(s.alg, ats)
	if len(ex) == 0 {
		return ""
	}
	e := ex[0]
	if algo.FamilyOf(s.alg.Kind()) == algo.FamilyFixedWindow {
		return fmt.Sprintf(
			"admission %d (local %v) at %d µs makes its window hold %.0f, over %d",
			e.Index,
			s.log[e.Index].local,
			e.At,
			e.Used,
			algo.MaxCost(s.alg),
		)
	}
	return fmt.Sprintf(
		"admission %d (local %v) at %d µs: %.3f tokens used of a burst of %d",
		e.Index,
		s.log[e.Index].local,
		e.At,
		e.Used,
		algo.MaxCost(s.alg),
	)
}

func (s *sim) admitted() int64 { return int64(len(s.log)) }

var phases = []phase{
	{300 * time.Millisecond, 1.6, false}, // saturated
	{450 * time.Millisecond, 0.3, false}, // quiet
	{750 * time.Millisecond, 2.0, true},  // saturated, one instance hot
	{900 * time.Millisecond, 0.8, true},  // just under the rate
	{1000 * time.Millisecond, 3, false},  // heavily saturated
}

var policy = Policy{RoundTrip: time.Millisecond, Lifetime: 4, Divisor: 8, Min: 2}

type scenario struct {
	name string
	alg  algorithms.Algorithm
	step time.Duration
}

var scenarios = []scenario{
	// T = 10µs, a whole number of µs: every unit's window is exact.
	{"gcra", algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 2000}, 50 * time.Microsecond},
	// T = 100/7 µs: windows err inwards by a µs.
	{
		"token_bucket",
		algorithms.TokenBucket{Capacity: 1500, Refill: algorithms.PerSecond(70_000)},
		37 * time.Microsecond,
	},
	{"fixed_window", algorithms.FixedWindow{Limit: 4000, Window: 50 * time.Millisecond}, 50 * time.Microsecond},
}

// TestFleetNeverOverAdmits runs 4 instances on one key of one memory store,
// each leasing, over phases of saturation and quiet, and checks every span
// of the admissions, local and direct, against the algorithm's bound. It
// runs the same demand with every request sent to the store and reports
// what the leases cost in admissions.
func TestFleetNeverOverAdmits(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			for seed := uint64(1); seed <= seeds(3); seed++ {
				leased := newSim(t, sc.alg, 4, true, policy)
				leased.run(seed, sc.step, phases)
				if msg := leased.check(); msg != "" {
					t.Fatalf("seed %d, leases: %s", seed, msg)
				}
				direct := newSim(t, sc.alg, 4, false, policy)
				direct.run(seed, sc.step, phases)
				if msg := direct.check(); msg != "" {
					t.Fatalf("seed %d, direct: %s", seed, msg)
				}
				local := leased.admitted() - leased.direct
				if local != leased.spent {
					t.Fatalf("seed %d: %d local admissions, %d units spent", seed, local, leased.spent)
				}
				// Every leased unit is spent, skipped, given back or held
				// at a lease's end.
				unspent := leased.leased - leased.spent
				if leased.expired+leased.returned != unspent {
					t.Fatalf(
						"seed %d: %d expired and %d returned of %d unspent",
						seed,
						leased.expired,
						leased.returned,
						unspent,
					)
				}
				lost := unspent - leased.givenBack
				deficit := direct.admitted() - leased.admitted()
				if algo.FamilyOf(sc.alg.Kind()) == algo.FamilyFixedWindow {
					// Windows are independent (a denied request is not
					// retried), so each window's deficit is bounded: the
					// leased fleet is denied only when the count is full,
					// and then has admitted all of it but what is held.
					d, l := direct.perWindow(), leased.perWindow()
					for w, n := range d {
						if n-l[w] > leased.heldAtDenial[w] {
							t.Fatalf(
								"seed %d, window %d: %d admitted directly, %d leased, %d held at a denial",
								seed,
								w,
								n,
								l[w],
								leased.heldAtDenial[w],
							)
						}
					}
				} else if deficit > lost+leased.maxHeld {
					t.Fatalf("seed %d: %d fewer admitted than directly, more than the %d lost and %d most held",
						seed, deficit, lost, leased.maxHeld)
				}
				t.Logf(
					"seed %d: shift %v; %d requests; under-admission %d (%.2f%%); direct-only fleet admitted %d; leased "+
						"fleet admitted %d (%d local, %d direct) in %d leases of %d units: %d expired, %d returned of "+
						"which %d came back; %d lost; held at leases' ends %d; most held at once %d; %d round trips "+
						"(%d denied), %d directly (%d denied)",
					seed,
					leased.shift,
					leased.requests,
					deficit,
					100*float64(deficit)/float64(direct.admitted()),
					direct.admitted(),
					leased.admitted(),
					local,
					leased.direct,
					leased.leasesTaken,
					leased.leased,
					leased.expired,
					leased.returned,
					leased.givenBack,
					lost,
					leased.wasteBound,
					leased.maxHeld,
					leased.trips,
					leased.denials,
					direct.trips,
					direct.denials,
				)
			}
		})
	}
}

// TestDeadlineRuleBroken is the case a deadline exists for: a bucket full
// at t0 leases 2 units (X = t0+T and t0+2T), and at t0+5T, the bucket full
// again, another instance takes a whole burst directly. Spending a leased
// unit then would make Burst+1 in an instant; the lease refuses it, its
// units expired. With every deadline moved 5T later on purpose, the unit
// is spent and the check finds the span over the bound.
func TestDeadlineRuleBroken(t *testing.T) {
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 2000}
	const T = 10 * time.Microsecond
	for _, broken := range []bool{false, true} {
		s := newSim(t, alg, 2, true, policy)
		t0 := s.clk.now
		res, _, err := s.st.Reserve(context.Background(), s.key, alg, t0, 2, 0)
		if err != nil || !res.Allowed {
			t.Fatalf("lease: %+v, %v", res, err)
		}
		l, err := New(alg, t0, 2, res, Config{})
		if err != nil {
			t.Fatal(err)
		}
		if e, d := l.Window(0); !d.Equal(t0) || e.After(t0) {
			t.Fatalf("unit 0's window [%v, %v], want its deadline at t0 %v", e, d, t0)
		}
		if broken {
			l.slip = (5 * T).Microseconds()
		}
		s.clk.now = t0.Add(5 * T)
		if res, ok := l.Spend(s.clk.now); ok {
			if !broken {
				t.Fatalf("a unit spent past its deadline: %+v", res)
			}
			s.log = append(s.log, admission{at: s.clk.now.UnixMicro(), local: true})
		} else if broken {
			t.Fatal("the broken lease spent nothing")
		}
		for range alg.Burst {
			res, err := s.st.Decide(context.Background(), s.key, alg, s.clk.now, 1)
			if err != nil || !res.Allowed {
				t.Fatalf("direct: %+v, %v", res, err)
			}
			s.log = append(s.log, admission{at: res.At.UnixMicro()})
		}
		msg := s.check()
		switch {
		case broken && msg == "":
			t.Fatal("a unit spent 5T past its deadline beside a full burst passed the check")
		case broken:
			t.Logf("deadline broken on purpose: %s", msg)
		case msg != "":
			t.Fatal(msg)
		}
	}
}

// TestDeadlineSlipInFleet runs the fleet with every deadline Burst×T late
// through saturation and then a long quiet stretch with spikes of up to a
// whole burst, so that units spent late meet a refilled bucket that one
// instance takes at once, and expects the check to catch it.
func TestDeadlineSlipInFleet(t *testing.T) {
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 2000}
	quiet := []phase{{200 * time.Millisecond, 1.6, false}, {400 * time.Millisecond, 0.2, false}}
	caught := 0
	for seed := uint64(1); seed <= seeds(10); seed++ {
		for _, slip := range []int64{0, 2000 * 10} {
			s := newSim(t, alg, 4, true, policy)
			s.slip = slip
			s.spikes, s.spike = 1000, -alg.Burst
			s.run(seed, 50*time.Microsecond, quiet)
			msg := s.check()
			switch {
			case slip == 0 && msg != "":
				t.Fatalf("seed %d: %s", seed, msg)
			case slip > 0 && msg != "":
				caught++
				t.Logf("seed %d, deadlines Burst×T late: %s", seed, msg)
			}
		}
	}
	if caught == 0 {
		t.Fatal("deadlines Burst×T late never exceeded the bound")
	}
}

// seeds returns how many seeds a fleet test runs: n, or under the race
// detector, which looks for data races rather than for the runs' spans,
// at most 3 (the first seeds that break TestDeadlineSlipInFleet's rule
// on purpose are 2 and 3) and 1 for a check without a deliberate break.
func seeds(n uint64) uint64 {
	switch {
	case !race.Enabled:
		return n
	case n > 3:
		return 3
	}
	return 1
}
