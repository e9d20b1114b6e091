package replay

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/storememory"
)

// alignedBursts is the trace of compare --workload custom --shape bursts
// --on 15s --off 45s --aligned: every key's bursts of 150 in 15s start on
// a minute boundary, against a limit of 100 per minute.
func alignedBursts(t *testing.T, aligned bool, keys int) *workload.Workload {
	t.Helper()
	w, err := workload.Custom(workload.Spec{Limit: workload.DefaultLimit, Rate: 150.0 / 60, Shape: "bursts",
		On: 15 * time.Second, Off: 45 * time.Second, Aligned: aligned, Duration: 10 * time.Minute, Keys: keys,
		Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The fixed window that judges a trace's timing decides as
// algorithms.FixedWindow does on the memory store, at every shift, on
// traces of one and many keys, of costs above 1 and of 0.
func TestFixedWindowReferenceDecidesAsTheAlgorithm(t *testing.T) {
	traces := []*workload.Workload{alignedBursts(t, true, 3), alignedBursts(t, false, 20)}
	for _, name := range workload.Names {
		w, err := workload.Builtin(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		traces = append(traces, w)
	}
	f, err := os.Open("testdata/logins.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	logins, err := workload.ReadTrace(f, "logins", workload.Limit{Count: 5, Window: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// Costs above 1, and of 0, which a trace file cannot hold.
	costly := &workload.Workload{Name: "costs", Limit: 10, Window: time.Minute, Start: workload.Start,
		Duration: 2 * time.Minute, Keys: []string{"a", "b"}}
	for i, c := range []int64{3, 0, 4, 3, 1, 5, 0, 9, 2, 0} {
		costly.Requests = append(costly.Requests,
			workload.Request{At: time.Duration(i) * 13 * time.Second, Key: int32(i % 2), Cost: c})
	}
	traces = append(traces, logins, costly)
	for _, w := range traces {
		alg := algorithms.FixedWindow{Limit: w.Limit, Window: w.Window}
		for i := range alignmentShifts {
			shift := w.Window * time.Duration(i) / alignmentShifts
			m := moved(w, shift)
			want, err := replayAll(context.Background(), storememory.New(), m, alg, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			if j := firstDifference(want, fixedWindowDecisions(m)); j >= 0 {
				t.Fatalf("%s moved %v: request %d: the reference decides %v, FixedWindow %v",
					w.Name, shift, j, !want[j], want[j])
			}
		}
	}
}

// Bursts that start on the window's boundaries flatter a fixed window: on
// the trace it holds the limit, and moved later the same bursts take it
// over. The verdict says so, with the figures a replay of the moved trace
// gives, and names no algorithm whose decisions do not depend on where
// the boundaries fall.
func TestAlignedBurstsFlatterTheFixedWindow(t *testing.T) {
	w := alignedBursts(t, true, 10)
	rep, err := Compare(context.Background(), Config{
		Workloads: []*workload.Workload{w}, Algorithms: []string{"fixed_window", "sliding_log", "gcra"},
		Targets: []Target{Memory{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := rep.Verdicts[0]
	if !v.Held || v.Choice.Algorithm != "fixed_window" || v.Choice.Overshoot != 1 {
		t.Fatalf("verdict: %s (want fixed_window holding the limit at 1.00× on aligned bursts)", v.Text)
	}
	a := v.Alignment
	if a == nil || a.Shift <= 0 || a.Shift >= w.Window {
		t.Fatalf("no alignment, or one moved by a shift outside the window: %+v", a)
	}
	m := *w
	m.Start = w.Start.Add(a.Shift)
	fixedWindow := algorithms.FixedWindow{Limit: 100, Window: time.Minute}
	acc, err := Replay(context.Background(), storememory.New(), &m, fixedWindow)
	if err != nil {
		t.Fatal(err)
	}
	if acc.Overshoot <= 1 {
		t.Fatalf("moved %v later, fixed_window admits %.2f×: the shift does not show the flattery", a.Shift, acc.Overshoot)
	}
	if len(a.Rose) != 1 || a.Rose[0].Algorithm != "fixed_window" || a.Rose[0].Overshoot != 1 ||
		a.Rose[0].Moved != acc.Overshoot {
		t.Errorf("rose: got %+v, want fixed_window alone, from 1.00× to %.2f×", a.Rose, acc.Overshoot)
	}
	for _, want := range []string{
		fmt.Sprintf("moved %s later, the same requests take fixed_window to %.2f× the limit (1.00× here)",
			shortDuration(a.Shift), acc.Overshoot),
		"fixed_window held the limit at this timing only",
	} {
		if !strings.Contains(v.AlignmentText, want) {
			t.Errorf("alignment text %q does not say %q", v.AlignmentText, want)
		}
	}
}

// Traces whose timing does not flatter a fixed window get no Alignment:
// the built-in workloads but steady-above, which starts its key on a
// boundary at 1.5× the limit, over several seeds, and bursts that start
// at each key's own offset.
func TestUnalignedTracesGetNoAlignment(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		for _, name := range workload.Names {
			w, err := workload.Builtin(name, seed)
			if err != nil {
				t.Fatal(err)
			}
			shift, flatters := flatteringShift(w)
			if want := name == "steady-above"; flatters != want {
				t.Errorf("%s, seed %d: flattering (moved %v) %v, want %v", name, seed, shift, flatters, want)
			}
		}
	}
	w := alignedBursts(t, false, 100)
	if shift, flatters := flatteringShift(w); flatters {
		t.Errorf("bursts at offsets of their own: flattering, moved %v", shift)
	}
	rep, err := Compare(context.Background(), Config{
		Workloads: []*workload.Workload{w}, Algorithms: []string{"fixed_window", "gcra"}, Targets: []Target{Memory{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := rep.Verdicts[0]; v.Alignment != nil || v.AlignmentText != "" {
		t.Errorf("bursts at offsets of their own: %+v, %q", v.Alignment, v.AlignmentText)
	}
	i := slices.IndexFunc(rep.Rows, func(r Row) bool { return r.Algorithm == "fixed_window" })
	if o := rep.Rows[i].Overshoot; o <= 1 {
		t.Errorf("fixed_window at %.2f× on bursts at offsets of their own: no key's burst straddles a boundary", o)
	}
}

// TestConfigureCalendar: the calendar window replays per calendar day,
// week or month, and refuses a window that is none of them.
func TestConfigureCalendar(t *testing.T) {
	for _, c := range []struct {
		window time.Duration
		period string
	}{
		{24 * time.Hour, "day"},
		{7 * 24 * time.Hour, "week"},
		{28 * 24 * time.Hour, "month"},
		{31 * 24 * time.Hour, "month"},
	} {
		alg, err := Configure("calendar_window", 10, c.window, Options{})
		if got, ok := alg.(algorithms.CalendarWindow); err != nil || !ok || got.Period != c.period || got.Limit != 10 {
			t.Errorf("Configure(calendar_window, 10, %v) = %v, %v; want 10 per %s", c.window, alg, err, c.period)
		}
	}
	for _, w := range []time.Duration{time.Minute, 48 * time.Hour, 32 * 24 * time.Hour} {
		if _, err := Configure("calendar_window", 10, w, Options{}); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("Configure(calendar_window, 10, %v): %v, want ErrInvalidOption", w, err)
		}
	}
	if slices.Contains(AlgorithmNames, "calendar_window") {
		t.Errorf("AlgorithmNames %v holds the calendar window, which has no window of its own", AlgorithmNames)
	}
}
