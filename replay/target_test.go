package replay

import (
	"context"
	"math"
	"testing"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay/workload"
)

// An algorithm whose state has one size costs one figure of memory per key
// on the memory store, whatever the workload and the run, measured over
// FixedStateKeys keys; a log's figure is measured over the keys its
// replay left.
func TestMemoryPerKeyOfFixedStateIsOneFigure(t *testing.T) {
	var fixed []string
	for _, k := range algorithms.Kinds() {
		if f := algo.FamilyOf(k); f != algo.FamilyLog && f != algo.FamilyCalendar { // the calendar has no minute window
			fixed = append(fixed, k.String())
		}
	}
	var ws []*workload.Workload
	for _, name := range []string{"steady-below", "zipf"} {
		w, err := workload.Builtin(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	figures := map[string][]float64{}
	for run := range 4 {
		// Each figure measured afresh, not from the cache of a run before.
		fixedStateCache.Clear()
		rep, err := Compare(
			context.Background(),
			Config{Workloads: ws[run%2 : run%2+1], Algorithms: append(fixed, "sliding_log"), Targets: []Target{Memory{}}},
		)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rep.Rows {
			s := r.Stores[0]
			if s.BytesPerKey == nil {
				t.Fatalf("run %d, %s on %s: no memory measured", run, r.Algorithm, r.Workload)
			}
			if r.Algorithm == "sliding_log" {
				if s.KeysHeld < 1 {
					t.Errorf("run %d, sliding_log on %s: measured over %d keys, want the keys held", run, r.Workload, s.KeysHeld)
				}
				continue
			}
			if s.KeysHeld != FixedStateKeys {
				t.Errorf(
					"run %d, %s on %s: measured over %d keys, want %d",
					run,
					r.Algorithm,
					r.Workload,
					s.KeysHeld,
					FixedStateKeys,
				)
			}
			figures[r.Algorithm] = append(figures[r.Algorithm], *s.BytesPerKey)
		}
	}
	for alg, fs := range figures {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, f := range fs {
			lo, hi = min(lo, f), max(hi, f)
		}
		if len(fs) != 4 || hi > 1.02*lo {
			t.Errorf("%s: %.1f B/key on two workloads in two runs, want one figure within 2%%", alg, fs)
		}
	}
}

// miniredis's MEMORY USAGE is its estimate of its own Go structures, not
// Redis's memory: it is not reported.
func TestMiniredisReportsNoMemory(t *testing.T) {
	w, err := workload.Builtin("boundary", 1)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(
		context.Background(),
		Config{
			Workloads:  []*workload.Workload{w},
			Algorithms: []string{"sliding_log", "gcra"},
			Targets:    []Target{Memory{}, Miniredis{}},
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		mem, mini := r.Stores[0], r.Stores[1]
		if mini.BytesPerKey != nil || mini.KeysHeld != 0 {
			t.Errorf(
				"%s on miniredis: memory reported (%v) over %d keys, want none",
				r.Algorithm,
				mini.BytesPerKey != nil,
				mini.KeysHeld,
			)
		}
		if mini.CommandsPerDecision == nil {
			t.Errorf("%s on miniredis: no commands counted", r.Algorithm)
		}
		if mem.BytesPerKey == nil || mem.KeysHeld == 0 {
			t.Errorf(
				"%s on memory: memory reported (%v) over %d keys, want a figure",
				r.Algorithm,
				mem.BytesPerKey != nil,
				mem.KeysHeld,
			)
		}
	}
}
