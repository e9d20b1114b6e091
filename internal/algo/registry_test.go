package algo_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// Every registered algorithm, built from its own Params, is the same value:
// Params and Kind.New describe each algorithm completely.
func TestParamsRoundTrip(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 7, Window: 90 * time.Second},
		algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6},
		algorithms.TokenBucket{Capacity: 20, Refill: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}},
		algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20},
	} {
		got, err := alg.Kind().New(algo.ParamsOf(alg))
		if err != nil || got != alg {
			t.Errorf("%s: New(Params()) = %#v, %v; want %#v", alg, got, err, alg)
		}
		if k, err := algorithms.Lookup(alg.Kind().String()); err != nil || k != alg.Kind() ||
			k.String() != alg.Kind().String() {
			t.Errorf("Lookup(%q) = %v, %v; want %v", alg.Kind().String(), k, err, alg.Kind())
		}
	}
	if got, want := len(algorithms.Kinds()), len(algo.Names()); got != want || got < 5 {
		t.Fatalf("%d kinds, %d names", got, want)
	}
}

// Quota is the limit an idle key admits at once and the time it takes to
// get it back in full; String is the display form.
func TestQuotaAndString(t *testing.T) {
	for _, c := range []struct {
		alg    algorithms.Algorithm
		quota  algo.Quota
		String string
	}{
		{algorithms.FixedWindow{Limit: 100, Window: time.Minute}, algo.Quota{Limit: 100, Window: time.Minute},
			"fixed_window 100/1m"},
		{algorithms.SlidingLog{Limit: 5, Window: 15 * time.Minute}, algo.Quota{Limit: 5, Window: 15 * time.Minute},
			"sliding_log 5/15m"},
		{algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6},
			algo.Quota{Limit: 100, Window: time.Minute}, "sliding_window 100/1m in 6 sub-windows"},
		// 20 tokens at 7 per 1.5s refill in 20 × 1.5s / 7 = 4.285714s.
		{algorithms.TokenBucket{Capacity: 20, Refill: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}},
			algo.Quota{Limit: 20, Window: 4285714 * time.Microsecond}, "token_bucket 7/1500ms burst 20"},
		// 20 requests at 10 per second drain in 2s.
		{algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20}, algo.Quota{Limit: 20, Window: 2 * time.Second},
			"gcra 10/1s burst 20"},
	} {
		if got := algo.QuotaOf(c.alg); got != c.quota {
			t.Errorf("%s: Quota() = %+v, want %+v", c.alg, got, c.quota)
		}
		if got := c.alg.String(); got != c.String {
			t.Errorf("String() = %q, want %q", got, c.String)
		}
		if algo.MaxCost(c.alg) != c.quota.Limit {
			t.Errorf("%s: MaxCost %d, Quota().Limit %d", c.alg, algo.MaxCost(c.alg), c.quota.Limit)
		}
	}
}

func TestKindNewRejects(t *testing.T) {
	fixed, _ := algorithms.Lookup("fixed_window")
	gcra, _ := algorithms.Lookup("gcra")
	for _, c := range []struct {
		kind *algorithms.Kind
		p    algorithms.Params
		want error
	}{
		{fixed, algorithms.Params{Limit: 10, Window: time.Second, Burst: 5}, algorithms.ErrInvalidAlgorithm},
		{fixed, algorithms.Params{Limit: 10, Window: time.Second, SubWindows: 5}, algorithms.ErrInvalidAlgorithm},
		{&algorithms.Kind{}, algorithms.Params{Limit: 10, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{fixed, algorithms.Params{Limit: 0, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{gcra, algorithms.Params{Limit: 10, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{gcra, algorithms.Params{Limit: 10, Window: time.Nanosecond, Burst: 1}, algorithms.ErrInvalidAlgorithm},
	} {
		if alg, err := c.kind.New(c.p); !errors.Is(err, c.want) || alg != nil {
			t.Errorf("%s.New(%+v) = %v, %v; want %v", c.kind, c.p, alg, err, c.want)
		}
	}
	if _, err := algorithms.Lookup("leaky"); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		t.Errorf("Lookup(leaky): %v, want ErrInvalidAlgorithm", err)
	}
}

// Nominal sets every kind to one limit per window, and WithQuota changes
// only the quota's limit, keeping the scope.
func TestNominalAndWithQuota(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, 100, time.Minute, 6)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		window := time.Minute
		if algo.FamilyOf(k) == algo.FamilyCalendar {
			window = 25 * time.Hour // a day, the calendar's nominal period for a minute
		}
		if q := algo.QuotaOf(alg); q.Limit != 100 || q.Window != window {
			t.Errorf("%s: quota %+v, want 100 per %v", alg, q, window)
		}
		lower := algo.WithQuotaLimit(alg, 10)
		if algo.MaxCost(lower) != 10 || algo.ScopeOf(lower) != algo.ScopeOf(alg) || lower.Kind() != k {
			t.Errorf("WithQuota(%s, 10) = %s", alg, lower)
		}
	}
}

// embedded satisfies the sealed interface by embedding a registered type;
// CheckKind, and through it CheckDecision, reject it.
type embedded struct{ algorithms.GCRA }

func (embedded) Decide(algo.State, time.Time, int64) (algo.State, algorithms.Result) {
	return nil, algorithms.Result{Allowed: true}
}

// forged also reports a Kind of its own making.
type forged struct{ algorithms.GCRA }

func (forged) Kind() *algorithms.Kind { return &algorithms.Kind{} }

func TestCheckKindRejectsEmbedding(t *testing.T) {
	alg := embedded{algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := algo.CheckKind(alg); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		t.Fatalf("CheckKind: %v, want ErrInvalidAlgorithm", err)
	}
	if err := algo.CheckDecision(alg, now, 1); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
		t.Fatalf("CheckDecision: %v, want ErrInvalidAlgorithm", err)
	}
	if err := algo.CheckDecision(alg.GCRA, now, 1); err != nil {
		t.Fatalf("CheckDecision on the GCRA itself: %v", err)
	}
	for _, bad := range []algorithms.Algorithm{forged{alg.GCRA}, &alg.GCRA, nil} {
		if err := algo.CheckKind(bad); !errors.Is(err, algorithms.ErrInvalidAlgorithm) {
			t.Errorf("CheckKind(%#v): %v, want ErrInvalidAlgorithm", bad, err)
		}
	}
	if err := algo.CheckKind(&alg.GCRA); !strings.Contains(err.Error(), "by value") {
		t.Errorf("CheckKind of a pointer: %q does not say to pass the value", err)
	}
	if got := algo.WithQuotaLimit(forged{alg.GCRA}, 5); got != (forged{alg.GCRA}) {
		t.Errorf("SetQuotaLimit of a forged kind: %#v, want it unchanged", got)
	}
}

// A request of cost n is admitted exactly when an inspection at the same
// time reports at least n remaining, for every algorithm, whatever the
// state: with stale times, costs up to the limit and limits that change.
// Stores rely on it to decide a set of limits all or nothing.
func TestInspectionPredictsAdmission(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, k := range algorithms.Kinds() {
		for seq := range 200 {
			limit := 1 + rng.Int64N(12)
			window := time.Duration(1+rng.Int64N(5000)) * time.Millisecond
			alg, err := algo.Nominal(k, limit, window, 1)
			if err != nil {
				t.Fatal(err)
			}
			if algo.TakesSubWindows(k) {
				alg, _ = k.New(
					algorithms.Params{
						Limit:      limit,
						Window:     window / time.Millisecond * 5 * time.Millisecond,
						SubWindows: 5,
					},
				)
			}
			if algo.TakesBurst(k) && rng.IntN(2) == 0 {
				p := algo.ParamsOf(alg)
				p.Limit = 1 + rng.Int64N(7) // a rate count unlike the burst
				alg, _ = k.New(p)
			}
			now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			var st algo.State
			for step := range 300 {
				now = now.Add(time.Duration(rng.Int64N(int64(window)/3)) - window/20)
				if rng.IntN(40) == 0 {
					alg = algo.WithQuotaLimit(alg, 1+rng.Int64N(12))
				}
				n := 1 + rng.Int64N(algo.MaxCost(alg))
				_, peek := algo.Decide(alg, st, now, 0)
				var res algorithms.Result
				st, res = algo.Decide(alg, st, now, n)
				if res.Allowed != (peek.Remaining >= n) {
					t.Fatalf(
						"%s sequence %d step %d, cost %d: inspection %+v, decision %+v",
						alg,
						seq,
						step,
						n,
						peek,
						res,
					)
				}
			}
		}
	}
}

// MaxLimit is where Validate draws the line for every kind.
func TestMaxLimit(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		if _, err := algo.Nominal(k, algo.MaxLimit(k), time.Hour, 60); err != nil {
			t.Errorf("%s at its MaxLimit %d: %v", k, algo.MaxLimit(k), err)
		}
		if _, err := algo.Nominal(k, algo.MaxLimit(k)+1, time.Hour, 60); !errors.Is(
			err,
			algorithms.ErrInvalidAlgorithm,
		) {
			t.Errorf("%s above its MaxLimit %d: %v, want ErrInvalidAlgorithm", k, algo.MaxLimit(k), err)
		}
	}
}
