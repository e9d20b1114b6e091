package replay

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/exact"
	"github.com/ratewise/ratewise/replay/workload"
)

func TestMeasureHandComputed(t *testing.T) {
	s := time.Second
	// Limit 2 per 10s, one key. The exact log admits 0s and 1s, denies
	// 2s, admits 10s (0s has expired) and 11s.
	w := &workload.Workload{Limit: 2, Window: 10 * s, Start: workload.Start, Duration: 12 * s, Keys: []string{"k"},
		Requests: []workload.Request{
			{At: 0, Cost: 1},
			{At: s, Cost: 1},
			{At: 2 * s, Cost: 1},
			{At: 10 * s, Cost: 1},
			{At: 11 * s, Cost: 1},
		}}
	exact := Exact(w)
	if got, want := exact, []bool{true, true, false, true, true}; !equal(got, want) {
		t.Fatalf("Exact: got %v, want %v", got, want)
	}
	// An algorithm that admitted everything but the last: 3 in [0s, 10s),
	// 3 in (1s, 11s].
	a := Measure(w, []bool{true, true, true, true, false}, exact)
	want := Accuracy{
		Requests:     5,
		Admitted:     4,
		Denied:       1,
		MaxInWindow:  3,
		Overshoot:    1.5,
		OverLimit:    2,
		FalseAdmits:  1,
		FalseDenials: 1,
	}
	if a != want {
		t.Fatalf("Measure:\ngot  %+v\nwant %+v", a, want)
	}
	if got := Measure(w, exact, exact); got.FalseAdmits != 0 || got.FalseDenials != 0 || got.OverLimit != 0 ||
		got.MaxInWindow != 2 {
		t.Fatalf("Measure of the exact decisions: %+v", got)
	}
}

func equal(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSeriesKeepsPeaks(t *testing.T) {
	s := time.Second
	w := &workload.Workload{Limit: 5, Window: 10 * s, Start: workload.Start, Duration: 40 * s, Keys: []string{"k"}}
	for i := range 5 {
		w.Requests = append(w.Requests, workload.Request{At: 15*s + time.Duration(i)*time.Millisecond, Cost: 1})
	}
	// Four buckets of 10s: the burst at 15s, in the middle of the second
	// bucket, is its peak; it is still in the trailing window at 20s, the
	// third bucket's start, and has expired by 30s.
	got := Series(w, nil, 0, 4)
	want := []int64{0, 5, 5, 0}
	for i, p := range got {
		if p.Value != want[i] {
			t.Fatalf("bucket %d: got %d, want %d (%v)", i, p.Value, want[i], got)
		}
	}
}

// The window-boundary attack on both embedded stores: the fixed window
// admits twice the limit within one window, the sliding log exactly the
// limit, and the sliding window counter stays within its documented bound
// of the limit plus one sub-window's admissions.
func TestBoundaryAttack(t *testing.T) {
	w, rep := boundaryReport(t)
	got := map[string]Row{}
	for _, r := range rep.Rows {
		got[r.Algorithm] = r
		if len(r.Stores) != 2 || r.Stores[1].RoundTripsPerDecision < 1 {
			t.Errorf("%s: store figures %+v", r.Algorithm, r.Stores)
		}
	}
	if o := got["fixed_window"].Overshoot; o != 2 {
		t.Errorf("fixed window: %.2f× the limit, want 2.00×", o)
	}
	if r := got["sliding_log"]; r.Overshoot != 1 || r.FalseAdmits != 0 || r.FalseDenials != 0 {
		t.Errorf(
			"sliding log: %.2f×, %d false admits, %d false denials; want 1.00×, 0, 0",
			r.Overshoot,
			r.FalseAdmits,
			r.FalseDenials,
		)
	}
	// The bound: Limit + the most admitted in one sub-window.
	alg, _ := Configure("sliding_window", w.Limit, w.Window, Options{})
	_, allowed, err := runOne(context.Background(), Memory{}, w, alg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []exact.Event
	for i, r := range w.Requests {
		if allowed[i] {
			events = append(events, exact.Event{At: r.At, Cost: r.Cost})
		}
	}
	sub := w.Window / DefaultSubWindows
	bound := w.Limit + exact.MaxInWindow(events, sub)
	if m := got["sliding_window"].MaxInWindow; m > bound {
		t.Errorf("sliding window counter: %d in a window, above its bound %d", m, bound)
	}
}

// boundaryReport is the window-boundary attack compared on every
// algorithm, on the memory store and miniredis: computed once, for the
// tests that read it.
func boundaryReport(t *testing.T) (*workload.Workload, *Report) {
	t.Helper()
	boundary.once.Do(func() {
		boundary.w, boundary.err = workload.Builtin("boundary", 1)
		if boundary.err == nil {
			boundary.rep, boundary.err = Compare(context.Background(), Config{
				Workloads: []*workload.Workload{boundary.w}, Algorithms: AlgorithmNames,
				Targets: []Target{Memory{}, Miniredis{}},
			})
		}
	})
	if boundary.err != nil {
		t.Fatal(boundary.err)
	}
	return boundary.w, boundary.rep
}

var boundary struct {
	once sync.Once
	w    *workload.Workload
	rep  *Report
	err  error
}

// The sliding log run on a store must be the exact reference on every
// built-in workload, and every store must make the same decisions.
func TestSlidingLogIsExactOnEveryWorkload(t *testing.T) {
	ws, err := workload.All(1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(
		context.Background(),
		Config{Workloads: ws, Algorithms: []string{"sliding_log"}, Targets: []Target{Memory{}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		if r.FalseAdmits != 0 || r.FalseDenials != 0 || r.OverLimit != 0 || r.Overshoot > 1 {
			t.Errorf("%s: sliding log %+v, want exact", r.Workload, r.Accuracy)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for q, want := range map[float64]time.Duration{0.5: 500 * time.Microsecond, 0.99: 990 * time.Microsecond} {
		got := h.quantile(q)
		if diff := float64(got-want) / float64(want); diff < -0.02 || diff > 0.02 {
			t.Errorf("quantile %.2f: got %v, want %v within 2%%", q, got, want)
		}
	}
}
