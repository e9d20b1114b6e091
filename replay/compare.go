package replay

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay/workload"
)

// Config says what Compare runs.
type Config struct {
	Workloads  []*workload.Workload
	Algorithms []string // names, see AlgorithmNames
	Options    Options
	// Candidates are algorithms replayed as they are configured, on every
	// workload, after those named in Algorithms: candidate limits to judge
	// against each workload's limit.
	Candidates []algorithms.Algorithm
	// Targets are the stores to run on. The first one's decisions are the
	// reference: every other target must make exactly the same ones.
	Targets []Target
	// Timed is how long the timed phase runs each algorithm on each
	// target; 0 skips it. Goroutines and TimedKeys shape its load.
	Timed      time.Duration
	Goroutines func(Target) int
	TimedKeys  int
	// TimedLimit is the limit every algorithm enforces in the timed phase;
	// the zero Limit means workload.DefaultLimit.
	TimedLimit workload.Limit
	// SeriesPoints is how many points each chart line has; 0 skips charts.
	SeriesPoints int
	// Progress, if set, is told of every finished step, one call at a time.
	Progress func(done, total int, step string)
	// Within, if set, is told how far a long replay has got, as a fraction,
	// every 65,536 requests: progress inside a step. Replays may run at
	// once, so it must be safe for concurrent use.
	Within func(step string, frac float64)
}

// Report is everything Compare measured.
type Report struct {
	Workloads []WorkloadInfo `json:"workloads"`
	Targets   []string       `json:"stores"`
	Rows      []Row          `json:"results"`
	Timings   []Timing       `json:"timed,omitempty"`
	// TimedLimit and TimedWindow are the limit of the timed phase.
	TimedLimit  int64         `json:"timed_limit,omitempty"`
	TimedWindow time.Duration `json:"timed_window_ns,omitempty"`
	// Verdicts says, per workload in the order of Workloads, which
	// algorithm held the limit at the least cost (see Verdict).
	Verdicts []Verdict `json:"verdicts"`
	// Charts holds, per workload, the trailing-window admissions of the
	// hottest key over time: the offered load first, then each algorithm.
	Charts map[string][]Line `json:"-"`
}

// WorkloadInfo describes a workload in a report.
type WorkloadInfo struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Limit       int64         `json:"limit"`
	Window      time.Duration `json:"window_ns"`
	Duration    time.Duration `json:"duration_ns"`
	Requests    int           `json:"requests"`
	Keys        int           `json:"keys"`
	ActiveKeys  int           `json:"active_keys"`
}

// Row is one algorithm on one workload.
type Row struct {
	Workload  string `json:"workload"`
	Algorithm string `json:"algorithm"`
	// Params is Settings as a string, such as "100/1m in 10 sub-windows".
	Params string `json:"params"`
	// Settings are the parameters the algorithm ran with: the workload's
	// limit and window, and the burst or sub-windows that Configure chose.
	Settings algorithms.Params `json:"-"`
	Accuracy
	Stores []StoreFigures `json:"stores"`
}

// StoreFigures is what one run cost one target.
type StoreFigures struct {
	Target string `json:"store"`
	// BytesPerKey is measured memory per key held; nil when the store
	// cannot report it (miniredis, whose MEMORY USAGE is no guide to
	// Redis's). See Instance.BytesPerKey for how each target measures it.
	BytesPerKey *float64 `json:"bytes_per_key"`
	// KeysHeld is how many keys BytesPerKey is the average of: the keys
	// sampled with MEMORY USAGE on Redis; on the memory store,
	// FixedStateKeys for an algorithm of fixed-size state, or the keys the
	// replay on copies of the workload's keys left; 0 when nothing was
	// measured.
	KeysHeld int `json:"keys_measured"`
	// RoundTripsPerDecision and CommandsPerDecision count network round
	// trips and the commands run inside Redis per decision; commands is nil
	// for a store without commands.
	RoundTripsPerDecision float64  `json:"round_trips_per_decision"`
	CommandsPerDecision   *float64 `json:"commands_per_decision"`
}

// Line is one line of a chart.
type Line struct {
	Name   string
	Points []Point
}

type job struct {
	w   *workload.Workload
	alg algorithms.Algorithm
	row *Row
}

// Compare replays every workload against every algorithm on every target,
// then times every algorithm on every target.
func Compare(ctx context.Context, cfg Config) (*Report, error) {
	rep := &Report{Charts: map[string][]Line{}}
	var jobs []job
	for _, w := range cfg.Workloads {
		if len(w.Requests) == 0 {
			return nil, fmt.Errorf("%w: workload %s has no requests", workload.ErrInvalid, w.Name)
		}
		rep.Workloads = append(rep.Workloads, WorkloadInfo{
			Name: w.Name, Description: w.Description, Limit: w.Limit, Window: w.Window, Duration: w.Duration,
			Requests: len(w.Requests), Keys: len(w.Keys), ActiveKeys: w.ActiveKeys(),
		})
		for _, name := range cfg.Algorithms {
			alg, err := Configure(name, w.Limit, w.Window, cfg.Options)
			if err != nil {
				return nil, fmt.Errorf("workload %s: %w", w.Name, err)
			}
			rep.Rows = append(
				rep.Rows,
				Row{
					Workload:  w.Name,
					Algorithm: name,
					Params:    algo.ParamsString(alg),
					Settings:  algo.ParamsOf(alg),
				},
			)
			jobs = append(jobs, job{w: w, alg: alg})
		}
		for _, alg := range cfg.Candidates {
			rep.Rows = append(
				rep.Rows,
				Row{
					Workload:  w.Name,
					Algorithm: alg.Kind().String(),
					Params:    algo.ParamsString(alg),
					Settings:  algo.ParamsOf(alg),
				},
			)
			jobs = append(jobs, job{w: w, alg: alg})
		}
	}
	for i := range jobs {
		jobs[i].row = &rep.Rows[i]
	}
	for _, t := range cfg.Targets {
		rep.Targets = append(rep.Targets, t.Name())
	}

	total := len(jobs) * len(cfg.Targets)
	if cfg.Timed > 0 {
		total += len(cfg.Algorithms) * len(cfg.Targets)
	}
	var mu sync.Mutex
	done := 0
	step := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, total, what)
		}
	}

	reference := make([][]bool, len(jobs))
	for ti, t := range cfg.Targets {
		run := func(j int) error {
			jb := jobs[j]
			var within func(float64)
			if cfg.Within != nil {
				what := fmt.Sprintf("%s: %s on %s", jb.w.Name, jb.alg.Kind().String(), t.Name())
				within = func(f float64) { cfg.Within(what, f) }
			}
			figures, allowed, err := runOne(ctx, t, jb.w, jb.alg, within)
			if err != nil {
				return fmt.Errorf("%s on %s, workload %s: %w", jb.alg.Kind().String(), t.Name(), jb.w.Name, err)
			}
			if ti == 0 {
				reference[j] = allowed
			} else if i := firstDifference(reference[j], allowed); i >= 0 {
				return fmt.Errorf("%s and %s disagree on %s, workload %s, request %d at %v: %s admitted=%v, %s admitted=%v",
					cfg.Targets[0].Name(), t.Name(), jb.alg.Kind().String(), jb.w.Name, i, jb.w.Requests[i].At,
					cfg.Targets[0].Name(), reference[j][i], t.Name(), allowed[i])
			}
			mu.Lock()
			jb.row.Stores = append(jb.row.Stores, figures)
			mu.Unlock()
			step(fmt.Sprintf("%s: %s on %s", jb.w.Name, jb.alg.Kind().String(), t.Name()))
			return nil
		}
		g, gctx := errgroup.WithContext(ctx)
		if t.Parallel() {
			g.SetLimit(runtime.GOMAXPROCS(0))
		} else {
			g.SetLimit(1)
		}
		for j := range jobs {
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				return run(j)
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		// Parallel runs finish in any order; keep the targets' order.
		for _, jb := range jobs {
			sortStores(jb.row.Stores, rep.Targets)
		}
	}

	exact := map[*workload.Workload][]bool{}
	for j, jb := range jobs {
		if exact[jb.w] == nil {
			exact[jb.w] = Exact(jb.w)
		}
		jb.row.Accuracy = Measure(jb.w, reference[j], exact[jb.w])
		if cfg.SeriesPoints > 0 {
			hot := Hottest(jb.w)
			lines := rep.Charts[jb.w.Name]
			if len(lines) == 0 {
				lines = append(lines, Line{Name: "offered", Points: Series(jb.w, nil, hot, cfg.SeriesPoints)})
			}
			rep.Charts[jb.w.Name] = append(
				lines,
				Line{Name: jb.alg.Kind().String(), Points: Series(jb.w, reference[j], hot, cfg.SeriesPoints)},
			)
		}
	}

	rep.Verdicts = verdicts(rep)
	if err := checkAlignments(ctx, rep, cfg.Workloads, jobs); err != nil {
		return nil, err
	}

	if cfg.Timed > 0 {
		l := cfg.TimedLimit
		if l == (workload.Limit{}) {
			l = workload.DefaultLimit
		}
		rep.TimedLimit, rep.TimedWindow = l.Count, l.Window
		for _, t := range cfg.Targets {
			for _, name := range cfg.Algorithms {
				window := l.Window
				if name == (algorithms.CalendarWindow{}).Kind().String() {
					window = 24 * time.Hour // timed as a quota per day
				}
				alg, err := Configure(name, l.Count, window, cfg.Options)
				if err != nil {
					return nil, err
				}
				g := runtime.GOMAXPROCS(0)
				if cfg.Goroutines != nil {
					g = cfg.Goroutines(t)
				}
				tm, err := Time(ctx, t, alg, cfg.Timed, g, max(cfg.TimedKeys, 1))
				if err != nil {
					return nil, fmt.Errorf("timing %s on %s: %w", name, t.Name(), err)
				}
				rep.Timings = append(rep.Timings, tm)
				step(fmt.Sprintf("timed %s on %s", name, t.Name()))
			}
		}
	}
	return rep, nil
}

// runOne replays w through alg on a fresh instance of t, and returns what
// the run cost the store and whether each request was admitted. A target
// that is KeyParallel replays its keys on several goroutines.
func runOne(
	ctx context.Context,
	t Target,
	w *workload.Workload,
	alg algorithms.Algorithm,
	within func(float64),
) (StoreFigures, []bool, error) {
	inst, err := t.Open(ctx)
	if err != nil {
		return StoreFigures{}, nil, err
	}
	defer inst.Close()
	s := inst.Store()
	goroutines := 1
	if kp, ok := t.(KeyParallel); ok {
		goroutines = kp.ReplayGoroutines()
	}
	allowed, err := replayAll(ctx, s, w, alg, within, goroutines)
	if err != nil {
		return StoreFigures{}, nil, err
	}
	ops, err := inst.Ops(ctx)
	if err != nil {
		return StoreFigures{}, nil, err
	}
	n := float64(len(w.Requests))
	f := StoreFigures{Target: t.Name(), RoundTripsPerDecision: float64(ops.RoundTrips) / n}
	if ops.Commands >= 0 {
		c := float64(ops.Commands) / n
		f.CommandsPerDecision = &c
	}
	perKey, measured, err := inst.BytesPerKey(ctx, w, activeKeys(w), alg)
	if err != nil {
		return StoreFigures{}, nil, err
	}
	if measured > 0 {
		f.BytesPerKey, f.KeysHeld = &perKey, measured
	}
	return f, allowed, nil
}

// activeKeys lists the keys that sent requests, busiest first, so that a
// sample of them covers the keys that hold the most state.
func activeKeys(w *workload.Workload) []string {
	counts := make([]int, len(w.Keys))
	for _, r := range w.Requests {
		counts[r.Key]++
	}
	var idx []int
	for k, c := range counts {
		if c > 0 {
			idx = append(idx, k)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return counts[idx[a]] > counts[idx[b]] })
	keys := make([]string, len(idx))
	for i, k := range idx {
		keys[i] = w.Keys[k]
	}
	return keys
}

func firstDifference(a, b []bool) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

func sortStores(s []StoreFigures, order []string) {
	pos := map[string]int{}
	for i, n := range order {
		pos[n] = i
	}
	sort.SliceStable(s, func(a, b int) bool { return pos[s[a].Target] < pos[s[b].Target] })
}
