package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ratewise/ratewise/replay/workload"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/replay"
)

// guideExamples are the recommend runs docs/choosing.md shows: exact limits
// at the sizes where a sorted-set log's memory (QPS × window records of
// about 100 B each) starts to matter, and the two approximate branches.
var guideExamples = []recommend.Input{
	{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000},
	{QPS: 2000, Window: time.Minute, Precision: "exact", Keys: 10},
	{QPS: 10, Window: 24 * time.Hour, Precision: "exact", Keys: 100_000},
	{QPS: 20000, Window: 10 * time.Second, Precision: "approx", Keys: 100_000},
	{QPS: 50, Window: time.Second, Precision: "approx", Keys: 10_000, Burst: 20},
}

func guide(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("guide", "Regenerates docs/choosing.md and its charts from a fresh compare run and from recommend\nruns, so that no number in the guide is edited by hand. docs/choosing.md is generated with\n-start-redis, so that its memory figures are Redis's.", stdout)
	var out string
	var timed time.Duration
	var rf redisFlags
	fs.StringVar(&out, "out", "docs", "the docs directory: writes choosing.md and img/choosing/*.svg")
	fs.DurationVar(&timed, "time", 500*time.Millisecond, "timed phase per algorithm and store")
	rf.register(fs.FlagSet, "run compare (instead of miniredis) and recommend's examples")
	if err := fs.parse(args); err != nil {
		return err
	}
	live := isTerminal(stdout) && isTerminal(stderr)
	redisTarget, err := rf.open(ctx)
	if err != nil {
		return err
	}
	second, measureOn := replay.Target(replay.Miniredis{}), replay.Target(replay.Memory{})
	if redisTarget != nil {
		defer redisTarget.Close()
		second, measureOn = redisTarget, redisTarget
	}
	f := compareFlags{seed: 1, subWindows: replay.DefaultSubWindows, timed: timed, concurrency: runtime.GOMAXPROCS(0), redisWorkers: 16}
	workloads, err := workload.All(f.seed)
	if err != nil {
		return err
	}
	rep, err := f.compareOn(ctx, workloads, replay.AlgorithmNames, []replay.Target{replay.Memory{}, second}, stderr, live)
	if err != nil {
		return err
	}
	imgDir := filepath.Join(out, "img", "choosing")
	if _, err := report.WriteCharts(imgDir, rep); err != nil {
		return err
	}

	command := "go run ./cmd/ratewise guide " + strings.Join(args, " ")
	where := "the in-memory store and an in-process miniredis"
	switch {
	case rf.start:
		where = "the in-memory store and a real Redis, a throwaway redis-server the guide started"
	case redisTarget != nil:
		where = "the in-memory store and a real Redis (" + redisTarget.Name() + ")"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, guideIntro, strings.TrimSpace(command), where)
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. Regenerate with `%s`; "+
		"the simulated figures are exact and repeat on any machine, the timings and memory are this machine's.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), strings.TrimSpace(command))

	fmt.Fprint(&b, "## The window-boundary attack\n\n")
	fmt.Fprint(&b, "The window-boundary problem, measured: a fixed window admits up to twice its limit across a window boundary. "+
		"Here the limit is 100 per minute, and 100 requests arrive in the second before a minute boundary and 100 in the second after, three times. "+
		"The chart shows, for each algorithm, how many requests it had admitted in the trailing minute at every instant; the dashed black line is the limit.\n\n")
	fmt.Fprint(&b, "![admitted in the trailing minute on the boundary attack](img/choosing/boundary.svg)\n\n")
	var one bytes.Buffer
	if err := report.Write(&one, onlyWorkload(rep, "boundary"), "markdown"); err != nil {
		return err
	}
	b.Write(one.Bytes())

	fmt.Fprint(&b, guideTree)
	if redisTarget != nil {
		fmt.Fprint(&b, "The examples below measure memory and latency on the same real Redis, with `--start-redis`.\n\n")
	} else {
		fmt.Fprint(&b, "The examples below measure memory and latency on the in-memory store's Go heap; `--redis ADDR` or `--start-redis` measures a real Redis, "+
			"where a sorted-set record costs many times more ([benchmarks.md](benchmarks.md) has the Redis figures, from `go run ./bench/cmd/thresholds`).\n\n")
	}
	for _, in := range guideExamples {
		in.MemoryBudget, in.LatencyBudget = 1e9, time.Millisecond
		m, err := recommend.Measure(ctx, in, measureOn, func(string) {})
		if err != nil {
			return err
		}
		d, err := recommend.Decide(in, m.Figures)
		if err != nil {
			return err
		}
		cmd := fmt.Sprintf("go run ./cmd/ratewise recommend --qps %g --window %s --precision %s --keys %d", in.QPS, report.Duration(in.Window), in.Precision, in.Keys)
		if in.Burst > 0 {
			cmd += fmt.Sprintf(" --burst %d", in.Burst)
		}
		if redisTarget != nil {
			cmd += " --start-redis"
		}
		var out bytes.Buffer
		writeRecommendation(&out, in, m, d)
		fmt.Fprintf(&b, "```console\n$ %s\n%s\n```\n\n", cmd, bytes.TrimRight(out.Bytes(), "\n"))
	}

	fmt.Fprint(&b, guideWorkloads)
	for _, wl := range rep.Workloads {
		if wl.Name == "boundary" {
			continue
		}
		fmt.Fprintf(&b, "![%s](img/choosing/%s.svg)\n\n", wl.Name, wl.Name)
		one.Reset()
		if err := report.Write(&one, onlyWorkload(rep, wl.Name), "markdown"); err != nil {
			return err
		}
		b.Write(one.Bytes())
	}
	fmt.Fprint(&b, "## Speed\n\n")
	one.Reset()
	timings := &replay.Report{Timings: rep.Timings, TimedLimit: rep.TimedLimit, TimedWindow: rep.TimedWindow}
	if err := report.Write(&one, timings, "markdown"); err != nil {
		return err
	}
	b.Write(one.Bytes())
	if redisTarget != nil {
		fmt.Fprint(&b, guideSpeedRedis)
	} else {
		fmt.Fprint(&b, guideSpeedMiniredis)
	}
	fmt.Fprint(&b, guideReading)

	path := filepath.Join(out, "choosing.md")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "ratewise: wrote %s and %d charts in %s\n", path, len(rep.Workloads), imgDir)
	return nil
}

// onlyWorkload is the part of rep about one workload.
func onlyWorkload(rep *replay.Report, name string) *replay.Report {
	out := &replay.Report{Targets: rep.Targets}
	for _, wl := range rep.Workloads {
		if wl.Name == name {
			out.Workloads = append(out.Workloads, wl)
		}
	}
	for _, r := range rep.Rows {
		if r.Workload == name {
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

var guideIntro = strings.TrimLeft(`
# Choosing an algorithm

<!-- Generated by "%[1]s". Do not edit: edit cmd/ratewise/guide.go and regenerate. -->

No single rate-limiting algorithm fits every workload. The classic
decision tree gives one for each case: a fixed window counter for simple
quotas, though it admits up to twice its limit across a window boundary;
a sliding log on a sorted set for an exact count; a sliding window counter
for an approximate one at moderate QPS; and a token or leaky bucket at
high QPS. This guide puts numbers on that tree. Every figure below was
printed by ratewise itself: the tables by `+"`ratewise compare`"+`, the
recommendations by `+"`ratewise recommend`"+`, both run on %[2]s.

`, "\n")

var guideTree = `## The decision tree, measured

` + "`ratewise recommend`" + ` takes the rate each key may reach (` + "`--qps`" + `), the
window, the precision you need, the number of keys active at once and an
optional burst, and applies the classic decision tree to measured figures:

1. **Exact** → the sliding log, when a full window of QPS × window records
   per key, times the keys, fits the memory budget (` + "`--memory`" + `, default
   1 GB) and a decision on a full log stays within the latency budget
   (` + "`--latency`" + `, default 1 ms). Otherwise the sliding window counter, the
   nearest approximation, with its measured error.
2. **Approximate with a burst** → GCRA, whose burst is its own parameter.
3. **Approximate** → the sliding window counter when it fits the budget,
   otherwise GCRA.

It then says where this machine's measurements disagree with the classic
thresholds (the sorted set unsuitable above QPS 1,000 with a window over
10 s; the counter suited up to QPS 10,000).

`

var guideWorkloads = `## Every built-in workload

Each workload is replayed on a simulated clock, so the figures are exact
and the same on every run with the same ` + "`--seed`" + `. Every algorithm is
configured for the same nominal limit: the windowed ones admit the limit per
window; the token bucket and GCRA admit a burst of the limit, refilled at
the limit per window. Charts show the busiest key.

`

var guideSpeedMiniredis = `The timed phase runs each algorithm for half a second on the real clock
over 10,000 keys. miniredis interprets every script in Go and is no guide
to Redis's speed; ` + "`--redis ADDR`" + ` or ` + "`--start-redis`" + ` times a real server.

`

var guideSpeedRedis = `The timed phase runs each algorithm for half a second on the real clock
over 10,000 keys, from 16 goroutines on Redis, with client and server
sharing this machine's cores.

`

var guideReading = `## Reading the figures

- **max in window** is the most any one key had admitted within any span of
  the window's length, wherever the span starts; **× limit** is that over
  the limit. An exact limiter never exceeds 1.00.
- **false admits** and **false denials** compare each decision with the one
  an exact sliding log makes on the same trace: admitted where the log
  denied, and denied where the log admitted. An algorithm that admits too
  early often denies later requests the log would have admitted, so the two
  tend to travel together.
- **B/key** is measured, not estimated: on the memory store, the growth of
  the Go heap divided by the keys the store holds (replayed on at least
  2,560 copies of the workload's keys, so that one key's few hundred bytes
  are not lost in the heap's noise); on Redis, ` + "`MEMORY USAGE`" + ` averaged over
  up to 1,000 keys; on miniredis, miniredis's own estimate of its Go
  structures, which is not what Redis would use.
- The memory store and Redis must make the same decisions on every request;
  the run stops with an error if they do not.
- **cmds** is the Redis commands the script ran per decision, besides the
  EVALSHA that carries it.
`
