package algorithms_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
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
		got, err := alg.Kind().New(alg.Params())
		if err != nil || got != alg {
			t.Errorf("%s: New(Params()) = %#v, %v; want %#v", alg, got, err, alg)
		}
		if k, err := algorithms.Lookup(alg.Name()); err != nil || k != alg.Kind() || k.Name() != alg.Name() {
			t.Errorf("Lookup(%q) = %v, %v; want %v", alg.Name(), k, err, alg.Kind())
		}
	}
	if got, want := len(algorithms.Kinds()), len(algorithms.Names()); got != want || got < 5 {
		t.Fatalf("%d kinds, %d names", got, want)
	}
}

// Quota is the limit an idle key admits at once and the time it takes to
// get it back in full; String is the display form.
func TestQuotaAndString(t *testing.T) {
	for _, c := range []struct {
		alg    algorithms.Algorithm
		quota  algorithms.Quota
		String string
	}{
		{algorithms.FixedWindow{Limit: 100, Window: time.Minute}, algorithms.Quota{Limit: 100, Window: time.Minute}, "fixed_window 100/1m"},
		{algorithms.SlidingLog{Limit: 5, Window: 15 * time.Minute}, algorithms.Quota{Limit: 5, Window: 15 * time.Minute}, "sliding_log 5/15m"},
		{algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6}, algorithms.Quota{Limit: 100, Window: time.Minute}, "sliding_window 100/1m in 6 sub-windows"},
		// 20 tokens at 7 per 1.5s refill in 20 × 1.5s / 7 = 4.285714s.
		{algorithms.TokenBucket{Capacity: 20, Refill: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}},
			algorithms.Quota{Limit: 20, Window: 4285714 * time.Microsecond}, "token_bucket 7/1500ms burst 20"},
		// 20 requests at 10 per second drain in 2s.
		{algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20}, algorithms.Quota{Limit: 20, Window: 2 * time.Second}, "gcra 10/1s burst 20"},
	} {
		if got := c.alg.Quota(); got != c.quota {
			t.Errorf("%s: Quota() = %+v, want %+v", c.alg, got, c.quota)
		}
		if got := c.alg.String(); got != c.String {
			t.Errorf("String() = %q, want %q", got, c.String)
		}
		if c.alg.MaxCost() != c.quota.Limit {
			t.Errorf("%s: MaxCost %d, Quota().Limit %d", c.alg, c.alg.MaxCost(), c.quota.Limit)
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
		{fixed, algorithms.Params{Limit: 10, Window: time.Second, Burst: 5}, algorithms.ErrParamNotTaken},
		{fixed, algorithms.Params{Limit: 10, Window: time.Second, SubWindows: 5}, algorithms.ErrParamNotTaken},
		{&algorithms.Kind{}, algorithms.Params{Limit: 10, Window: time.Second}, algorithms.ErrUnknownAlgorithm},
		{fixed, algorithms.Params{Limit: 0, Window: time.Second}, algorithms.ErrInvalidLimit},
		{gcra, algorithms.Params{Limit: 10, Window: time.Second}, algorithms.ErrInvalidBurst},
		{gcra, algorithms.Params{Limit: 10, Window: time.Nanosecond, Burst: 1}, algorithms.ErrInvalidPeriod},
	} {
		if alg, err := c.kind.New(c.p); !errors.Is(err, c.want) || alg != nil {
			t.Errorf("%s.New(%+v) = %v, %v; want %v", c.kind, c.p, alg, err, c.want)
		}
	}
	if _, err := algorithms.Lookup("leaky"); !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
		t.Errorf("Lookup(leaky): %v, want ErrUnknownAlgorithm", err)
	}
}

// Nominal sets every kind to one limit per window, and WithQuota changes
// only the quota's limit, keeping the scope.
func TestNominalAndWithQuota(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		alg, err := k.Nominal(100, time.Minute, 6)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if q := alg.Quota(); q.Limit != 100 || q.Window != time.Minute {
			t.Errorf("%s: quota %+v, want 100 per 1m", alg, q)
		}
		lower := algorithms.SetQuotaLimit(alg, 10)
		if lower.MaxCost() != 10 || lower.Scope() != alg.Scope() || lower.Kind() != k {
			t.Errorf("WithQuota(%s, 10) = %s", alg, lower)
		}
	}
}

// embedded satisfies the sealed interface by embedding a registered type;
// CheckKind, and through it CheckDecision, reject it.
type embedded struct{ algorithms.GCRA }

func (embedded) Decide(algorithms.State, time.Time, int64) (algorithms.State, algorithms.Result) {
	return nil, algorithms.Result{Allowed: true}
}

// forged also reports a Kind of its own making.
type forged struct{ algorithms.GCRA }

func (forged) Kind() *algorithms.Kind { return &algorithms.Kind{} }

func TestCheckKindRejectsEmbedding(t *testing.T) {
	alg := embedded{algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := algorithms.CheckKind(alg); !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
		t.Fatalf("CheckKind: %v, want ErrUnknownAlgorithm", err)
	}
	if err := algorithms.CheckDecision(alg, now, 1); !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
		t.Fatalf("CheckDecision: %v, want ErrUnknownAlgorithm", err)
	}
	if err := algorithms.CheckDecision(alg.GCRA, now, 1); err != nil {
		t.Fatalf("CheckDecision on the GCRA itself: %v", err)
	}
	for _, bad := range []algorithms.Algorithm{forged{alg.GCRA}, &alg.GCRA, nil} {
		if err := algorithms.CheckKind(bad); !errors.Is(err, algorithms.ErrUnknownAlgorithm) {
			t.Errorf("CheckKind(%#v): %v, want ErrUnknownAlgorithm", bad, err)
		}
	}
	if err := algorithms.CheckKind(&alg.GCRA); !strings.Contains(err.Error(), "by value") {
		t.Errorf("CheckKind of a pointer: %q does not say to pass the value", err)
	}
	if got := algorithms.SetQuotaLimit(forged{alg.GCRA}, 5); got != (forged{alg.GCRA}) {
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
			alg, err := k.Nominal(limit, window, 1)
			if err != nil {
				t.Fatal(err)
			}
			if k.TakesSubWindows() {
				alg, _ = k.New(algorithms.Params{Limit: limit, Window: window / time.Millisecond * 5 * time.Millisecond, SubWindows: 5})
			}
			if k.TakesBurst() && rng.IntN(2) == 0 {
				p := alg.Params()
				p.Limit = 1 + rng.Int64N(7) // a rate count unlike the burst
				alg, _ = k.New(p)
			}
			now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			var st algorithms.State
			for step := range 300 {
				now = now.Add(time.Duration(rng.Int64N(int64(window)/3)) - window/20)
				if rng.IntN(40) == 0 {
					alg = algorithms.SetQuotaLimit(alg, 1+rng.Int64N(12))
				}
				n := 1 + rng.Int64N(alg.MaxCost())
				_, peek := alg.Decide(st, now, 0)
				var res algorithms.Result
				st, res = alg.Decide(st, now, n)
				if res.Allowed != (peek.Remaining >= n) {
					t.Fatalf("%s sequence %d step %d, cost %d: inspection %+v, decision %+v", alg, seq, step, n, peek, res)
				}
			}
		}
	}
}

// MaxLimit is where Validate draws the line for every kind.
func TestMaxLimit(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		if _, err := k.Nominal(k.MaxLimit(), time.Hour, 60); err != nil {
			t.Errorf("%s at its MaxLimit %d: %v", k, k.MaxLimit(), err)
		}
		if _, err := k.Nominal(k.MaxLimit()+1, time.Hour, 60); !errors.Is(err, algorithms.ErrOutOfRange) {
			t.Errorf("%s above its MaxLimit %d: %v, want ErrOutOfRange", k, k.MaxLimit(), err)
		}
	}
}
