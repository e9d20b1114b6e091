package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ratewise/ratewise/replay/workload"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/replay"
)

// guideExamples are the recommend questions docs/choosing.md shows, as
// command lines: a login limit, exact limits at the sizes where a
// sorted-set log's memory (QPS × window records of about 100 B each) starts
// to matter, an API gateway's approximate limit beyond one Redis, a burst,
// and a calendar quota. The README's example is among them.
var guideExamples = [][]string{
	{"--qps", "5/15m", "--precision", "exact", "--keys", "100000"},
	{"--qps", "100", "--window", "1m", "--precision", "exact", "--keys", "1000"},
	{"--qps", "5000", "--window", "1m", "--precision", "exact", "--keys", "100"},
	{"--qps", "10", "--window", "24h", "--precision", "exact", "--keys", "100000"},
	{"--qps", "20000", "--window", "1s", "--precision", "approx", "--keys", "100"},
	{"--qps", "50", "--window", "1s", "--precision", "approx", "--keys", "10000", "--burst", "20"},
	{"--qps", "10000/month", "--calendar", "month", "--keys", "100000"},
}

func guide(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand(
		"guide",
		"Regenerates docs/choosing.md and its charts from a fresh compare run and from recommend\nruns, so that no "+
			"number in the guide is edited by hand. It runs on a throwaway redis-server\nwhen one is on the "+
			"PATH, so that its memory figures are Redis's.",
		stdout,
	)
	var out string
	var timed time.Duration
	var rf storeFlags
	fs.StringVar(&out, "out", "docs", "the docs directory: writes choosing.md and img/choosing/*.svg")
	fs.DurationVar(&timed, "time", 500*time.Millisecond, "timed phase per algorithm and store")
	rf.register(fs.FlagSet, "run compare and recommend's examples", forGuide)
	if err := fs.parse(args); err != nil {
		return err
	}
	live := isTerminal(stdout) && isTerminal(stderr)
	redisTarget, described, err := rf.open(ctx)
	if err != nil {
		return err
	}
	second := replay.Target(replay.Miniredis{})
	if redisTarget != nil {
		defer redisTarget.Close()
		second = redisTarget
	}
	// The recommend examples run as a user runs them, on the store the
	// guide was asked for.
	var storeArgs []string
	switch {
	case rf.addr != "":
		storeArgs = []string{"--redis", rf.addr}
	case rf.cluster != "":
		storeArgs = []string{"--cluster", rf.cluster}
	case redisTarget == nil:
		storeArgs = []string{"--memory-store"}
	}
	f := compareFlags{seed: 1, timed: timed, concurrency: runtime.GOMAXPROCS(0), redisWorkers: 16}
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

	command := "go run ./cmd/ratewise guide " + strings.Join(redacted(args), " ")
	where := "the in-memory store and an in-process miniredis"
	switch {
	case redisTarget != nil && rf.addr == "" && rf.cluster == "":
		where = "the in-memory store and a real Redis, a throwaway redis-server the guide started"
	case redisTarget != nil:
		where = "the in-memory store and " + described
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, guideIntro, strings.TrimSpace(command), where)
	fmt.Fprintf(&b, "Machine: %s/%s, %d CPUs, %s. Regenerate with `%s`; "+
		"the simulated figures are exact and repeat on any machine, the timings and memory are this machine's.\n\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), strings.TrimSpace(command))

	fmt.Fprint(&b, guideAlgorithms)
	fmt.Fprint(&b, "## The window-boundary attack\n\n")
	fmt.Fprint(
		&b,
		"The window-boundary problem, measured: a fixed window admits up to twice its limit across a window boundary. "+
			"Here the limit is 100 per minute, and 100 requests arrive in the second before a minute boundary and 100 "+
			"in the second after, three times. "+
			"The chart shows, for each algorithm, how many requests it had admitted in the trailing minute at every "+
			"instant; the dashed black line is the limit.\n\n",
	)
	fmt.Fprint(&b, "![admitted in the trailing minute on the boundary attack](img/choosing/boundary.svg)\n\n")
	var one bytes.Buffer
	if err := report.Write(&one, onlyWorkload(rep, "boundary"), "markdown"); err != nil {
		return err
	}
	b.Write(one.Bytes())

	fmt.Fprint(&b, guideTree)
	if redisTarget != nil {
		where := "each on a throwaway redis-server of its own"
		if len(storeArgs) > 0 {
			where = "on the Redis the guide was given"
		}
		fmt.Fprintf(&b, "The examples below run `ratewise recommend` as printed, %s: "+
			"memory is what Redis reports for a full window, and time is Redis's own time per decision.\n\n", where)
	} else {
		fmt.Fprint(&b, "The examples below measure memory and latency on the in-memory store's Go heap; `--redis "+
			"ADDR` or `--start-redis` measures a real Redis, "+
			"where a sorted-set record costs many times more ([benchmarks.md](benchmarks.md) has the Redis figures, "+
			"from `go run ./bench/cmd/thresholds`).\n\n")
	}
	for _, example := range guideExamples {
		args := append([]string{"recommend"}, example...)
		args = append(args, storeArgs...)
		var out, errOut bytes.Buffer
		if code := run(ctx, args, &out, &errOut); code != 0 {
			return fmt.Errorf("%s: %s", strings.Join(args, " "), strings.TrimSpace(errOut.String()))
		}
		fmt.Fprintf(
			&b,
			"```console\n$ go run ./cmd/ratewise %s\n%s\n```\n\n",
			strings.Join(redacted(args), " "),
			bytes.TrimRight(out.Bytes(), "\n"),
		)
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

// redacted is a command line as the guide prints it: the address of a
// Redis, which may hold a password, becomes ADDR.
func redacted(args []string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "redis" && name != "cluster") {
			continue
		}
		if hasValue {
			out[i] = a[:strings.Index(a, "=")+1] + "ADDR"
		} else if i+1 < len(out) {
			out[i+1] = "ADDR"
		}
	}
	return out
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
	for _, v := range rep.Verdicts {
		if v.Workload == name {
			out.Verdicts = append(out.Verdicts, v)
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

var guideAlgorithms = `## The algorithms

Every algorithm is a value of package ` + "`algorithms`" + `, whose doc comment
states its exact semantics, accuracy and cost, and every store runs every
one:

- **Fixed window counter** (` + "`FixedWindow`" + `): one counter per window, the
  cheapest, but it admits up to twice its limit across a window boundary
  (the attack below).
- **Sliding log** (` + "`SlidingLog`" + `): one record per admitted request, exact
  over any window; its memory grows with rate × window. On Redis it is a
  sorted set, whose cost per decision does not grow with its size while
  its memory does, so it is the number of busy keys that rules it out, not
  QPS alone.
- **Compact log** (` + "`CompactLog`" + `): the sliding log's decisions from a ring
  of 8-byte timestamps, a fraction of the sorted set's memory on busy keys.
  It writes one timestamp per unit of cost, so choose the sorted set for
  requests that weigh thousands of units. On light keys the sorted set is
  the smaller: Redis packs a small one tightly, while the ring keeps its
  slots until the key has been idle for a window.
- **Sliding window counter** (` + "`SlidingWindow`" + `): the window cut into
  sub-windows, one counter each; approximate, at most the limit plus one
  sub-window's admissions in any window, with memory that grows with the
  number of sub-windows, not with traffic.
- **Token bucket** (` + "`TokenBucket`" + `) and **GCRA** (` + "`GCRA`" + `, the leaky bucket
  as a meter, as in redis-cell): constant memory and time, exact for their
  rate and burst, but not a count over a window.
- **Calendar window** (` + "`CalendarWindow`" + `): a quota per calendar day, week
  or month, for quotas people read off a calendar, such as a plan's monthly
  allowance or an invoice's line. It resets at the period's first instant
  in UTC, or in an IANA zone set in code
  (` + "`algorithms.CalendarWindow{Limit: 10000, Period: \"month\", Location: loc}`" + `,
  with ` + "`loc`" + ` from ` + "`time.LoadLocation`" + `), so a month lasts 28 to 31 days and a
  day 23 to 25 hours when the clocks change, with no date in the key. It
  is exact per period on every store, and, like any fixed window, admits up
  to twice its limit across a boundary: it is a quota, not burst
  protection, so stack it with a rate (` + "`ratewise.Stack`" + `) to spread the
  requests. It has no window, so compare leaves it out; recommend offers it
  only for ` + "`--calendar`" + ` questions.

[benchmarks.md](benchmarks.md) measures each one's memory, time and
throughput on Redis and in memory, beside the classic claims.

`

var guideTree = `## The decision tree, measured

` + "`ratewise recommend`" + ` takes the rate each key may reach (` + "`--qps`" + `, a number per
second or a count per period such as ` + "`5/15m`" + `) or the rate of all keys together
(` + "`--total-qps`" + `, written the same way and shared evenly among the keys), the
window, the precision you need, the number of keys active at once, an
optional burst and an optional calendar period. Its output says first which
of the two rates it read and what that makes of the other, as
` + "`ratewise help recommend`" + ` does with an example of each: with ` + "`--keys 100`" + `,
` + "`--qps 5000`" + ` is 500,000 per second in all, and ` + "`--total-qps 5000`" + ` is 50 per
second for each key. It then tries the answers to that question in order, checking
each against the memory budget (` + "`--memory`" + `, default 1 GB, for every key's
full window) and the time budget (` + "`--latency`" + `, default 1 ms, for the
store's own time per decision):

1. **A calendar quota** (` + "`--calendar day`" + ` or ` + "`month`" + `) → the calendar
   window, which resets at the first instant of each UTC day or month (a
   zone is set in code), with the boundary cost stated; with a burst below
   the quota, beside GCRA as a set of limits. Should it not fit, a fixed
   window of 24 hours, whose windows are UTC days, for a day, and for a
   month a sliding window counter of 31 days in daily sub-windows, on a key
   that names the month.
2. **Exact** → the compact log (8 bytes per request), then the sliding log
   on a sorted set; with a burst below the limit, either one beside GCRA as
   a set of limits. When no exact log fits, the sliding window counter and
   then GCRA, each said to be approximate, with its measured excess and its
   worst case.
3. **Approximate with a burst** → GCRA, then the token bucket: a burst is
   their own parameter.
4. **Approximate** → the sliding window counter, then GCRA.

Every rejected answer is listed with the budget it failed and the figure
that failed it; when nothing fits, the closest answer is named. Memory is
what the store reports for a full window, and time the median of five
samples of the store's own time per decision (Redis's ` + "`INFO commandstats`" + `), so
the same question gets the same answer on every run; a figure within a
margin of its budget (10% for memory, 25% for time) is called out, since
another run may answer differently there. On Redis, it then measures what
one Redis process serves of the answer and sizes a cluster for QPS × keys
at 50% utilisation, with a warning when one key alone is a large share of a
node. Last, it says where the measurements disagree with the classic
thresholds (the sorted set unsuitable above QPS 1,000 with a window over
10 s; the counter suited up to QPS 10,000).

A question that needs more than anyone runs is more likely a slip in its
input, such as a total rate given as ` + "`--qps`" + `, which is per key: the
recommendation then says so under its first lines, with the input that made
it and the question it may have meant. The limits, which
` + "`ratewise help recommend`" + ` prints, are ` + fmt.Sprintf(
	"%s decisions per second in all,\n%d Redis masters (the Redis Cluster specification designs a cluster for up "+
		"to\n1,000 nodes, %d masters with a replica each), and %d times the decisions per\nsecond one PostgreSQL "+
		"database served.",
	report.Int(recommend.MostDecisions), recommend.MostMasters, recommend.MostMasters, recommend.MostPostgres,
) + `

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

- Each table's legend says what its columns mean and how each figure was
  measured; its verdict names the algorithm that held the limit at the
  least cost, and the cheaper one that did not, if any.
- A **Timing** line under a verdict says that the workload's requests meet
  the windows' boundaries where counting per window does well, as a key
  that starts on a boundary does: moved later by the shift it names, the
  same requests take the algorithms it lists above their figures in the
  table. A fixed window's figure there holds for that timing only.
- **B/key** is measured, not estimated: on Redis, ` + "`MEMORY USAGE`" + ` averaged over
  up to 1,000 keys; on the memory store, the growth of the Go heap, over
  65,536 keys for a state of fixed size (so that one such state gives one
  figure on every workload) and over copies of the workload's keys for a
  state that grows with traffic. miniredis reports no memory: its own
  estimate of its Go structures is not what Redis would use.
- The memory store and Redis must make the same decisions on every request;
  the run stops with an error if they do not.
- An algorithm that admits too early often denies later requests an exact
  log would have admitted, so false admits and false denials tend to travel
  together.
`
