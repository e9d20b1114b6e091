package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/replay/workload"
)

// compareFlags are compare's flags; guide reuses them.
type compareFlags struct {
	workloads, algs, trace    string
	seed                      uint64
	limit                     int64
	window                    time.Duration
	rate, shape               string
	duration, on, off         time.Duration
	aligned                   bool
	keys                      int
	keysSet                   bool // --keys was given: the timed phase uses it too
	subWindows, burst         int64
	store                     storeFlags
	timed                     time.Duration
	concurrency, redisWorkers int
	format, svg               string
}

func (f *compareFlags) register(fs *flag.FlagSet) {
	fs.StringVar(
		&f.workloads,
		"workload",
		"all",
		"comma-separated workloads: "+strings.Join(workload.Names, ", ")+", custom; or all",
	)
	fs.StringVar(
		&f.algs,
		"alg",
		"all",
		"comma-separated algorithms: "+strings.Join(replay.AlgorithmNames, ", ")+"; or all; "+
			"or calendar_window, the quota per calendar day, week or month (UTC), with a --window of 24h, 168h or 28 to 31 days",
	)
	fs.StringVar(
		&f.trace,
		"trace",
		"",
		"replay this file as well: one request per line, `<time> [<key> [<cost>]]`, time in RFC 3339 or seconds",
	)
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random workloads; the same seed gives the same traces")
	fs.Int64Var(&f.limit, "limit", 100, "limit per window, for the custom workload, --trace and the timed phase")
	fs.DurationVar(
		&f.window,
		"window",
		time.Minute,
		"window of the limit, for the custom workload, --trace and the timed phase",
	)
	fs.StringVar(
		&f.rate,
		"rate",
		"150/min",
		"custom workload: each key's average request rate, such as 150/min, 2/s or 2.5 (per second); bursts send "+
			"it compressed into their on-periods",
	)
	fs.StringVar(&f.shape, "shape", "poisson", "custom workload: steady, poisson or bursts")
	fs.DurationVar(&f.duration, "duration", 10*time.Minute, "custom workload: simulated duration")
	fs.DurationVar(&f.on, "on", 10*time.Second, "custom workload with --shape bursts: how long each burst lasts")
	fs.DurationVar(&f.off, "off", 50*time.Second, "custom workload with --shape bursts: the pause between bursts")
	fs.BoolVar(
		&f.aligned,
		"aligned",
		false,
		"custom workload with --shape bursts: start every key's bursts at once on a window boundary, as a cron "+
			"job's, which flatters a fixed window; without it, each key's bursts start at an offset of its own, "+
			"drawn from --seed",
	)
	fs.IntVar(
		&f.keys,
		"keys",
		1,
		"custom workload: number of keys, each sending at --rate; when given, also the keys of the timed phase (else 10,000)",
	)
	fs.Int64Var(
		&f.subWindows,
		"subwindows",
		0,
		"sub-windows of the sliding window counter, which must split every window evenly; 0 means 10, or the "+
			"largest smaller count that splits the window",
	)
	fs.Int64Var(
		&f.burst,
		"burst",
		0,
		"capacity of the token bucket and burst of GCRA, for every workload; 0 means each workload's limit",
	)
	f.store.register(fs, "run beside the in-memory store", forCompare)
	fs.DurationVar(
		&f.timed,
		"time",
		500*time.Millisecond,
		"how long the timed phase runs each algorithm on each store, with --limit per --window; 0 skips it",
	)
	fs.IntVar(&f.concurrency, "concurrency", runtime.GOMAXPROCS(0), "goroutines of the timed phase on the memory store")
	fs.IntVar(&f.redisWorkers, "redis-concurrency", 16, "goroutines of the timed phase on a Redis or PostgreSQL store")
	fs.StringVar(&f.format, "format", "table", "output: "+strings.Join(report.Formats, ", "))
	fs.StringVar(&f.svg, "svg", "", "write one chart per workload as SVG into this directory")
}

func compare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f compareFlags
	fs := newCommand(
		"compare",
		"Replays seeded workloads on a simulated clock against every algorithm, on the in-memory\nstore and a "+
			"throwaway redis-server (or --redis, --cluster, --postgres, --start-postgres, or\nthe embedded "+
			"miniredis when redis-server is not installed), and prints what each algorithm admitted, how far "+
			"it\nstrayed from an exact sliding log, and what it cost. A timing line under a verdict says when "+
			"the\nrequests meet the windows' boundaries where counting per window does well: moved later,\nthe "+
			"same requests take the algorithms it names over their figures (see --aligned).",
		stdout,
	)
	f.register(fs.FlagSet)
	if err := fs.parse(args); err != nil {
		return err
	}
	fs.Visit(func(fl *flag.Flag) { f.keysSet = f.keysSet || fl.Name == "keys" })
	if !slices.Contains(report.Formats, f.format) {
		return usagef("unknown format %q (known: %s)", f.format, strings.Join(report.Formats, ", "))
	}
	rep, where, err := f.run(ctx, stderr, isTerminal(stdout) && isTerminal(stderr))
	if err != nil {
		return err
	}
	if f.svg != "" {
		files, err := report.WriteCharts(f.svg, rep)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "ratewise: wrote %d charts to %s\n", len(files), f.svg)
	}
	switch f.format {
	case "table", "markdown":
		fmt.Fprintf(stdout, "Measured on: %s.\n\n", where)
	default:
		// A line before a CSV header or a JSON document would break it.
		fmt.Fprintf(stderr, "ratewise: measured on %s\n", where)
	}
	return report.Write(stdout, rep, f.format)
}

// run builds the workloads and targets the flags describe and compares. It
// returns what the stores measured were, for the output: "the in-memory
// store and ...".
func (f *compareFlags) run(ctx context.Context, stderr io.Writer, live bool) (*replay.Report, string, error) {
	// ParseAlgorithms reads "" as every algorithm; an empty --alg is more
	// likely a variable that was not set.
	if strings.TrimSpace(f.algs) == "" {
		return nil, "", usagef(
			"--alg is empty: give comma-separated algorithms (%s) or all",
			strings.Join(replay.AlgorithmNames, ", "),
		)
	}
	algs, err := replay.ParseAlgorithms(f.algs)
	if err != nil {
		return nil, "", err
	}
	// The timed phase enforces --limit per --window, whatever the workloads.
	if f.limit < 1 {
		return nil, "", usagef("--limit must be > 0, got %d", f.limit)
	}
	if f.window < time.Millisecond {
		return nil, "", usagef("--window must be at least 1ms, got %v", f.window)
	}
	if f.subWindows < 0 {
		return nil, "", usagef("--subwindows must be >= 0, got %d", f.subWindows)
	}
	if f.burst < 0 {
		return nil, "", usagef("--burst must be >= 0, got %d", f.burst)
	}
	if f.timed < 0 {
		return nil, "", usagef("--time must be >= 0, got %v", f.timed)
	}
	if f.concurrency < 1 {
		return nil, "", usagef("--concurrency must be >= 1, got %d", f.concurrency)
	}
	if f.redisWorkers < 1 {
		return nil, "", usagef("--redis-concurrency must be >= 1, got %d", f.redisWorkers)
	}
	if f.keysSet && f.keys < 1 {
		return nil, "", usagef("--keys must be >= 1, got %d", f.keys)
	}
	workloads, err := f.buildWorkloads()
	if err != nil {
		return nil, "", err
	}
	if f.subWindows > 0 {
		for _, w := range workloads {
			if _, err := replay.Configure(
				"sliding_window", w.Limit, w.Window, replay.Options{SubWindows: f.subWindows},
			); err != nil {
				return nil, "", usagef("--subwindows %d, workload %s: %v", f.subWindows, w.Name, err)
			}
		}
	}
	if f.svg != "" {
		if err := checkWritable(f.svg); err != nil {
			return nil, "", err
		}
	}
	f.store.conns = f.redisWorkers + 4 // and the sweeps and measuring statements
	second, about, err := f.store.open(ctx)
	if err != nil {
		return nil, "", err
	}
	defer second.Close()
	targets := []replay.Target{replay.Memory{}}
	if _, alone := second.(replay.Memory); !alone {
		targets = append(targets, second)
		about = "the in-memory store and " + about
	}
	rep, err := f.compareOn(ctx, workloads, algs, targets, stderr, live)
	return rep, about, err
}

// checkWritable makes dir and writes and removes a file in it, so that a
// run is not lost to a directory its charts cannot be written into.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("--svg %q: cannot write charts there: %v", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".ratewise-probe-*")
	if err != nil {
		return usagef("--svg %q: cannot write charts there: %v", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// compareOn compares on the given targets.
func (f *compareFlags) compareOn(
	ctx context.Context,
	workloads []*workload.Workload,
	algs []string,
	targets []replay.Target,
	stderr io.Writer,
	live bool,
) (*replay.Report, error) {
	p := newProgress(stderr, live)
	defer p.finish()
	timedKeys := 10_000
	if f.keysSet {
		timedKeys = f.keys
	}
	return replay.Compare(ctx, replay.Config{
		Workloads: workloads, Algorithms: algs,
		Options: replay.Options{SubWindows: f.subWindows, Burst: f.burst}, Targets: targets,
		// The zero limit, as guide leaves it, is workload.DefaultLimit.
		Timed: f.timed, TimedLimit: workload.Limit{Count: f.limit, Window: f.window}, TimedKeys: timedKeys, SeriesPoints: 600,
		Goroutines: func(t replay.Target) int {
			if t.Name() == "memory" {
				return f.concurrency
			}
			return f.redisWorkers
		},
		Progress: p.step,
		Within:   p.within,
	})
}

func (f *compareFlags) buildWorkloads() ([]*workload.Workload, error) {
	var names []string
	switch {
	case f.workloads == "all" && f.trace != "":
		// A trace on its own replaces the built-in set.
	case f.workloads == "all":
		names = workload.Names
	default:
		for _, n := range strings.Split(f.workloads, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	if f.aligned && !slices.Contains(names, "custom") {
		return nil, usagef("--aligned applies to --workload custom with --shape bursts")
	}
	limit := workload.Limit{Count: f.limit, Window: f.window}
	var out []*workload.Workload
	for _, name := range names {
		var w *workload.Workload
		var err error
		if name == "custom" {
			rate, rerr := workload.ParseRate(f.rate)
			if rerr != nil {
				return nil, rerr
			}
			w, err = workload.Custom(workload.Spec{Limit: limit, Rate: rate, Shape: f.shape, On: f.on, Off: f.off,
				Aligned: f.aligned, Duration: f.duration, Keys: f.keys, Seed: f.seed})
		} else {
			w, err = workload.Builtin(name, f.seed)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	if f.trace != "" {
		file, err := os.Open(f.trace)
		if err != nil {
			return nil, fmt.Errorf("cannot read the trace: %w", err)
		}
		defer file.Close()
		w, err := workload.ReadTrace(file, filepath.Base(f.trace), limit)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	// /dev/null is a character device too.
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(st, null)
}
