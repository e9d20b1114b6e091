// Package recommend turns the classic decision tree for rate limiters (a
// fixed window counter for simple quotas, a sliding log on a sorted set up
// to about 1,000 QPS with a window up to about 10 s, a sliding window
// counter up to about 10,000 QPS, a token bucket or GCRA beyond) into rules
// over measured figures: given a rate, a window, a precision and a number
// of keys, it tries the candidates that answer the question in order,
// checks each against the memory and time budgets, and gives the figures
// behind every choice and every rejection.
//
// The figures a rule compares with a budget are robust ones: memory is
// what the store reports for a full window (exact on Redis), and time is
// the median of repeated samples of the store's own time per decision
// (Redis's INFO commandstats), so the same question gets the same answer on
// every run, except where a figure lies within a stated margin of a budget,
// which the decision then says.
package recommend

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay"
)

// ErrInvalid is wrapped by every error about recommend's input.
var ErrInvalid = errors.New("recommend: invalid input")

// Calendar periods a quota may reset at.
const (
	Day   = "day"
	Month = "month"
)

// MonthWindow is the window that stands for a calendar month in Input, the
// longest month: the rate "N/month" is N per 31 days.
const MonthWindow = 31 * 24 * time.Hour

// monthSubWindows splits MonthWindow into UTC days.
const monthSubWindows = 31

// Input is what the user asks for.
type Input struct {
	QPS       float64       // requests per second each key may make
	Window    time.Duration // the window the limit is counted over
	Precision string        // "exact" or "approx"
	Keys      int64         // keys active at once
	Burst     int64         // the most requests a key may send at once; 0 for a whole window's limit
	// Calendar is "day" or "month" for a quota that resets at the start of
	// each calendar day or month (UTC) rather than counting any window;
	// Window is then 24h or MonthWindow.
	Calendar string
	// MemoryBudget is the most memory the limiter's state may take, in
	// bytes; LatencyBudget the longest a decision may take in the store.
	MemoryBudget  int64
	LatencyBudget time.Duration
}

// Limit is the limit per window that QPS and Window make.
func (in Input) Limit() int64 { return int64(math.Round(in.QPS * in.Window.Seconds())) }

// Validate checks the input.
func (in Input) Validate() error {
	switch {
	case in.QPS <= 0 || math.IsNaN(in.QPS) || math.IsInf(in.QPS, 0):
		return fmt.Errorf("%w: --qps must be > 0, got %g", ErrInvalid, in.QPS)
	case in.Window < time.Millisecond:
		return fmt.Errorf("%w: --window must be at least 1ms, got %v", ErrInvalid, in.Window)
	case in.Limit() < 1:
		return fmt.Errorf("%w: --qps %g over --window %v is less than one request", ErrInvalid, in.QPS, in.Window)
	case math.Abs(in.QPS*in.Window.Seconds()-float64(in.Limit())) > 1e-3*float64(in.Limit()):
		return fmt.Errorf("%w: --qps %g over --window %v is %.4g requests, and a limit is a whole count: give the rate as a count per period, such as --qps %d/%s",
			ErrInvalid, in.QPS, in.Window, in.QPS*in.Window.Seconds(), max(1, in.Limit()), report.Duration(in.Window))
	case in.Limit() > 1<<40:
		return fmt.Errorf("%w: --qps %g over --window %v is %d requests, too many to keep a record of", ErrInvalid, in.QPS, in.Window, in.Limit())
	case in.Calendar == "" && in.Precision != "exact" && in.Precision != "approx":
		return fmt.Errorf("%w: --precision must be exact or approx, got %q", ErrInvalid, in.Precision)
	case in.Calendar != "" && in.Calendar != Day && in.Calendar != Month:
		return fmt.Errorf("%w: --calendar must be day or month, got %q", ErrInvalid, in.Calendar)
	case in.Calendar == Day && in.Window != 24*time.Hour:
		return fmt.Errorf("%w: --calendar day counts whole UTC days: give the quota per day, such as --qps 10000/day, and no other --window (got %v)", ErrInvalid, in.Window)
	case in.Calendar == Month && in.Window != MonthWindow:
		return fmt.Errorf("%w: --calendar month counts whole calendar months: give the quota per month, such as --qps 10000/month, and no other --window (got %v)", ErrInvalid, in.Window)
	case in.Keys < 1:
		return fmt.Errorf("%w: --keys must be >= 1, got %d", ErrInvalid, in.Keys)
	case in.Burst < 0:
		return fmt.Errorf("%w: --burst must be >= 0, got %d", ErrInvalid, in.Burst)
	case in.Burst > in.Limit():
		return fmt.Errorf("%w: --burst %d exceeds the limit of %d per %s: a key can never send more at once than a whole window allows; raise the limit or lower the burst",
			ErrInvalid, in.Burst, in.Limit(), report.Duration(in.Window))
	case in.MemoryBudget <= 0:
		return fmt.Errorf("%w: --memory must be > 0, got %d", ErrInvalid, in.MemoryBudget)
	case in.LatencyBudget <= 0:
		return fmt.Errorf("%w: --latency must be > 0, got %v", ErrInvalid, in.LatencyBudget)
	}
	return nil
}

// Options are the options the algorithms are measured and configured with:
// a calendar month's counter has one sub-window per UTC day.
func (in Input) Options() replay.Options {
	o := replay.Options{Burst: in.Burst}
	if in.Calendar == Month {
		o.SubWindows = monthSubWindows
	}
	return o
}

// Configured returns the named algorithm as the recommendation configures
// it for in: the limit per window, the burst and the sub-windows.
func Configured(in Input, name string) (algorithms.Algorithm, error) {
	return replay.Configure(name, in.Limit(), in.Window, in.Options())
}

// limitsBurst reports whether the input asks for bursts below a whole
// window's limit, which a window counter cannot enforce on its own.
func (in Input) limitsBurst() bool { return in.Burst > 0 && in.Burst < in.Limit() }

// Spread is a figure measured several times: the median and the range.
type Spread struct {
	Median, Min, Max time.Duration
	Samples          int
}

func (s Spread) String() string {
	if s.Samples <= 1 {
		return report.Latency(s.Median)
	}
	return fmt.Sprintf("%s (median of %d samples, %s–%s)", report.Latency(s.Median), s.Samples, report.Latency(s.Min), report.Latency(s.Max))
}

// Figures are what was measured for one algorithm at the input's size.
type Figures struct {
	Algorithm string
	// BytesPerKey is the memory one key holds with a full window, on
	// Store; Extrapolated says it was measured on fewer records and scaled.
	BytesPerKey  float64
	Store        string
	Extrapolated bool
	// Time is the store's own time per decision on a key with a full
	// window: Redis's time inside EVALSHA from INFO commandstats, or the
	// in-memory store's time per call.
	Time Spread
	// Overshoot is the most admitted in any window over the limit, on each
	// matching workload; FalseAdmits and FalseDenials are totals against an
	// exact sliding log over those workloads.
	Overshoot                 map[string]float64
	FalseAdmits, FalseDenials int64
}

// TotalBytes is the memory keys keys take.
func (f Figures) TotalBytes(keys int64) float64 { return f.BytesPerKey * float64(keys) }

// The classic thresholds: a sliding log on a sorted set stops being suitable
// when QPS exceeds about 1,000 with a window over about 10 s; the sliding
// window counter suits QPS up to about 10,000; token and leaky buckets
// (GCRA) have no upper limit.
const (
	classicSortedSetQPS    = 1000
	classicSortedSetWindow = 10 * time.Second
	classicCounterQPS      = 10000
)

// Margins within which a figure is called close to its budget: memory is
// measured exactly but scaled from a sample of keys and records; time is
// the median of a few samples on a machine shared with other work.
const (
	memoryMargin = 0.10
	timeMargin   = 0.25
)

// ClassicTree states, in a phrase, the classic decision tree that
// Decision.Classic follows.
var ClassicTree = fmt.Sprintf("calendar quotas: a fixed window; exact: a sliding log; approximate: a sliding window counter up to QPS %s, a token bucket or GCRA above",
	report.Int(classicCounterQPS))

// Decision is a recommendation with its reasons.
type Decision struct {
	// Algorithm is the recommendation: one algorithm's name, or two joined
	// by " + " for a set of limits checked together. It is empty when
	// nothing fits the budgets; Closest then names the nearest candidate,
	// and ClosestOver how far over its tightest budget it is.
	Algorithm string
	// Config is the recommendation as Go code.
	Config  string
	Reasons []string
	// Rejected says, for each candidate tried before the recommendation,
	// which budget it failed and by how much.
	Rejected []string
	// Close lists figures within the margin of a budget: on another run or
	// another machine, the answer may differ there.
	Close       []string
	Closest     string
	ClosestOver float64
	// Classic is what the classic decision tree would pick; Disagreements
	// say where the measurements part from the classic thresholds.
	Classic       string
	Disagreements []string
}

// Answer is the recommendation, or the closest candidate when nothing
// fits.
func (d Decision) Answer() string {
	if d.Algorithm == "" {
		return d.Closest
	}
	return d.Algorithm
}

// classicPick is the classic decision tree's pick.
func classicPick(in Input) string {
	switch {
	case in.Calendar != "":
		return "fixed_window"
	case in.Precision == "exact":
		return "sliding_log"
	case in.QPS > classicCounterQPS:
		return "gcra"
	}
	return "sliding_window"
}

// candidate is one answer to the question: an algorithm, or a set of two
// limits checked together.
type candidate struct {
	algs []string
	// exact is whether the candidate counts exactly what was asked.
	exact bool
}

func (c candidate) name() string { return strings.Join(c.algs, " + ") }

// candidates lists the answers to the question in the order they are
// preferred. An exact count with a smaller burst is the exact log and GCRA
// as a set; the approximations follow the exact candidates, so that an
// exact question falls back to the nearest approximation.
func candidates(in Input, figs map[string]Figures) []candidate {
	withBurst := func(algs ...string) []string {
		if in.limitsBurst() {
			return append(algs, "gcra")
		}
		return algs
	}
	var out []candidate
	add := func(exact bool, algs ...string) {
		for _, a := range algs {
			if _, ok := figs[a]; !ok {
				return // such as the compact log beyond its largest limit
			}
		}
		out = append(out, candidate{algs: algs, exact: exact})
	}
	switch {
	case in.Calendar == Day:
		add(true, withBurst("fixed_window")...)
	case in.Calendar == Month:
		add(true, withBurst("sliding_window")...)
	case in.Precision == "exact":
		add(true, withBurst("compact_log")...)
		add(true, withBurst("sliding_log")...)
		add(false, withBurst("sliding_window")...)
		add(false, "gcra")
	case in.Burst > 0:
		add(true, "gcra")
		add(true, "token_bucket")
	default:
		add(true, "sliding_window")
		add(true, "gcra")
	}
	return out
}

// verdict is a candidate checked against the budgets.
type verdict struct {
	c              candidate
	bytes, perKey  float64
	time           Spread
	store          string
	extrapolated   bool
	failed, close_ []string
	// over is how far over its worst budget the candidate is: at most 1
	// when it fits.
	over float64
}

func check(in Input, c candidate, figs map[string]Figures) verdict {
	v := verdict{c: c}
	for _, a := range c.algs {
		f := figs[a]
		v.perKey += f.BytesPerKey
		v.time.Median += f.Time.Median
		v.time.Min += f.Time.Min
		v.time.Max += f.Time.Max
		v.time.Samples = f.Time.Samples
		v.store = f.Store
		v.extrapolated = v.extrapolated || f.Extrapolated
	}
	v.bytes = v.perKey * float64(in.Keys)
	mem := v.bytes / float64(in.MemoryBudget)
	tm := float64(v.time.Median) / float64(in.LatencyBudget)
	v.over = max(mem, tm)
	memText := fmt.Sprintf("%s for %s (%s per key on %s%s) against the %s budget",
		Bytes(v.bytes), report.Keys(in.Keys), Bytes(v.perKey), v.store, extrapolatedText(v.extrapolated), Bytes(float64(in.MemoryBudget)))
	timeText := fmt.Sprintf("a decision takes %s in %s against the %s budget", v.time, v.store, report.Latency(in.LatencyBudget))
	if mem > 1 {
		v.failed = append(v.failed, "memory: "+memText)
	}
	if tm > 1 {
		v.failed = append(v.failed, "time: "+timeText)
	}
	if math.Abs(mem-1) <= memoryMargin {
		v.close_ = append(v.close_, fmt.Sprintf("%s's memory, %s, is within %.0f%% of the budget", c.name(), memText, 100*memoryMargin))
	}
	if math.Abs(tm-1) <= timeMargin || (v.time.Min <= in.LatencyBudget && in.LatencyBudget <= v.time.Max) {
		v.close_ = append(v.close_, fmt.Sprintf("%s's time, %s, is within %.0f%% of the budget or its samples straddle it", c.name(), timeText, 100*timeMargin))
	}
	return v
}

// Decide applies the rules to the figures, keyed by algorithm name. It
// needs figures for fixed_window, sliding_log, sliding_window, gcra and
// token_bucket; compact_log is a candidate when its figures are there.
func Decide(in Input, figs map[string]Figures) (Decision, error) {
	for _, name := range []string{"fixed_window", "sliding_log", "sliding_window", "gcra", "token_bucket"} {
		if _, ok := figs[name]; !ok {
			return Decision{}, fmt.Errorf("recommend: no figures for %s", name)
		}
	}
	d := Decision{Classic: classicPick(in)}
	var chosen *verdict
	var tried []verdict
	for _, c := range candidates(in, figs) {
		v := check(in, c, figs)
		tried = append(tried, v)
		d.Close = append(d.Close, v.close_...)
		if len(v.failed) == 0 {
			chosen = &v
			break
		}
		d.Rejected = append(d.Rejected, fmt.Sprintf("%s: %s", c.name(), strings.Join(v.failed, "; ")))
	}
	if chosen == nil {
		best := tried[0]
		for _, v := range tried[1:] {
			if v.over < best.over {
				best = v
			}
		}
		d.Closest, d.ClosestOver = best.c.name(), best.over
		d.Reasons = append(d.Reasons, fmt.Sprintf("budget: no candidate fits both the memory and the time budget; the closest, %s, is at %.2f× its tightest budget. Raise a budget, or lower the rate, window or keys",
			best.c.name(), best.over))
		d.Config = configOf(in, best.c)
		d.Disagreements = disagreements(in, figs)
		return d, nil
	}
	d.Algorithm = chosen.c.name()
	d.Config = configOf(in, chosen.c)
	d.Reasons = reasons(in, *chosen, figs)
	d.Disagreements = disagreements(in, figs)
	return d, nil
}

// reasons explains the chosen candidate.
func reasons(in Input, v verdict, figs map[string]Figures) []string {
	fixed, counter := figs["fixed_window"], figs["sliding_window"]
	budget := fmt.Sprintf("%s for %s (%s per key on %s%s) within the %s budget; a decision takes %s in %s, within %s",
		Bytes(v.bytes), report.Keys(in.Keys), Bytes(v.perKey), v.store, extrapolatedText(v.extrapolated), Bytes(float64(in.MemoryBudget)),
		v.time, v.store, report.Latency(in.LatencyBudget))
	var out []string
	main := v.c.algs[0]
	f := figs[main]
	switch {
	case in.Calendar == Day:
		out = append(out, fmt.Sprintf("calendar: a quota per UTC day resets at midnight, which is what a fixed window of 24h does: its windows start at multiples of the window since the Unix epoch, so each one is a UTC day. "+
			"Its boundary cost is the calendar quota's own: a key may use the whole quota just before midnight and again just after, %s in a short span (measured on the boundary attack)",
			overshootOn(fixed, "boundary")))
	case in.Calendar == Month:
		out = append(out, fmt.Sprintf("calendar: a month has no fixed length, and a fixed window's boundaries, at multiples of its length since the Unix epoch, cannot follow it: "+
			"a fixed window of 31 days resets inside almost every month and gives the key a second quota there. "+
			"Name the month in the key (\"user:1001:2026-12\"), so that every month starts at zero, and count it with a sliding window counter of 31 days in 31 sub-windows of one UTC day: "+
			"a request stops counting 30 to 31 days after it was made, never within its own month, so the counter counts the whole month exactly, in at most 31 counters. "+
			"Its boundary cost is the calendar quota's own: a key may use the whole quota at the end of one month and again at the start of the next, %s in a short span (the fixed window on the boundary attack)",
			overshootOn(fixed, "boundary")))
	case v.c.exact && in.Precision == "exact":
		what := "the sliding log counts every request"
		if main == "compact_log" {
			what = fmt.Sprintf("the compact log decides exactly as the sliding log, one 8-byte timestamp per request, against %s per key for the sorted-set log", Bytes(figs["sliding_log"].BytesPerKey))
		}
		out = append(out, fmt.Sprintf("precision: exact was asked for, and %s: %s; the fixed window reached %s", what, accuracy(f), worst(fixed.Overshoot)))
	case in.Precision == "exact":
		out = append(out, fmt.Sprintf("precision: exact was asked for, but no exact log fits (see the rejections); %s is the nearest approximation, and it is not exact: %s",
			main, accuracy(f)))
	case in.Burst > 0:
		out = append(out, fmt.Sprintf("burst: bursts of at most %s at a sustained %s per %s are exactly the two parameters of %s, while a window counter admits its whole limit of %s at once. "+
			"%s itself admits up to the burst plus the rate within one window: %s",
			report.Int(in.Burst), report.Int(in.Limit()), report.Duration(in.Window), main, report.Int(in.Limit()), main, accuracy(f)))
	case main == "sliding_window":
		out = append(out, "precision: approximate was asked for; the sliding window counter keeps the window's meaning: "+accuracy(f))
	default:
		out = append(out, fmt.Sprintf("precision: approximate was asked for, and the sliding window counter does not fit (see the rejections); GCRA keeps one timestamp per key: %s", accuracy(f)))
	}
	if len(v.c.algs) > 1 {
		out = append(out, fmt.Sprintf("burst: a window counter admits its whole limit at once; with GCRA{Rate: %s per %s, Burst: %s} beside it, as a ratewise.Stack, a key sends at most %s at once and both limits hold; GCRA adds %s per key",
			report.Int(in.Limit()), report.Duration(in.Window), report.Int(in.Burst), report.Int(in.Burst), Bytes(figs["gcra"].BytesPerKey)))
	}
	if main != "sliding_window" && in.Calendar == "" && !(v.c.exact && in.Precision == "exact") {
		out = append(out, "the sliding window counter, for comparison: "+accuracy(counter))
	}
	out = append(out, "cost: "+budget)
	return out
}

// disagreements says where the classic thresholds and the measurements part.
func disagreements(in Input, figs map[string]Figures) []string {
	log, counter := figs["sliding_log"], figs["sliding_window"]
	fits := func(f Figures) bool {
		return f.TotalBytes(in.Keys) <= float64(in.MemoryBudget) && f.Time.Median <= in.LatencyBudget
	}
	var out []string
	switch {
	case in.Calendar == Month:
		out = append(out, "the classic tree gives calendar quotas to the fixed window; that holds for a day, whose windows of 24h are UTC days, but no fixed window follows the months")
	case in.Calendar != "":
	case in.Precision == "exact":
		classicOK := !(in.QPS > classicSortedSetQPS && in.Window > classicSortedSetWindow)
		measuredOK := fits(log)
		switch {
		case !classicOK && measuredOK:
			out = append(out, fmt.Sprintf(
				"the classic thresholds rule the sorted set out above QPS %s with a window over %v; measured here, %s records per key cost %s and a decision %s, within the budgets for %s keys: memory per busy key and the number of keys decide, not QPS alone",
				report.Int(classicSortedSetQPS), report.Duration(classicSortedSetWindow), report.Int(in.Limit()), Bytes(log.BytesPerKey), report.Latency(log.Time.Median), report.Int(in.Keys)))
		case classicOK && !measuredOK:
			out = append(out, fmt.Sprintf(
				"the classic thresholds allow the sorted set at QPS %g over %v, but for %s keys it needs %s against the %s budget, and a decision takes %s: a threshold on QPS and window alone ignores the number of keys",
				in.QPS, report.Duration(in.Window), report.Int(in.Keys), Bytes(log.TotalBytes(in.Keys)), Bytes(float64(in.MemoryBudget)), report.Latency(log.Time.Median)))
		}
	case in.QPS > classicCounterQPS && fits(counter):
		out = append(out, fmt.Sprintf(
			"the classic thresholds send QPS above %s to a token or leaky bucket; measured here the sliding window counter costs %s per key and a decision %s whatever the rate, so QPS alone does not rule it out",
			report.Int(classicCounterQPS), Bytes(counter.BytesPerKey), report.Latency(counter.Time.Median)))
	}
	return out
}

// configOf writes a candidate as Go code, configured as Configured does.
func configOf(in Input, c candidate) string {
	window := goDuration(in.Window)
	if in.Calendar == Month {
		window = "31 * 24 * time.Hour"
	}
	var parts []string
	for _, name := range c.algs {
		alg, err := Configured(in, name)
		if err != nil {
			parts = append(parts, fmt.Sprintf("/* %s: %v */", name, err))
			continue
		}
		p := algo.ParamsOf(alg)
		limit := goInt(p.Limit)
		switch name {
		case "fixed_window":
			parts = append(parts, fmt.Sprintf("algorithms.FixedWindow{Limit: %s, Window: %s}", limit, window))
		case "sliding_log":
			parts = append(parts, fmt.Sprintf("algorithms.SlidingLog{Limit: %s, Window: %s}", limit, window))
		case "compact_log":
			parts = append(parts, fmt.Sprintf("algorithms.CompactLog{Limit: %s, Window: %s}", limit, window))
		case "sliding_window":
			parts = append(parts, fmt.Sprintf("algorithms.SlidingWindow{Limit: %s, Window: %s, SubWindows: %d}", limit, window, p.SubWindows))
		case "gcra":
			parts = append(parts, fmt.Sprintf("algorithms.GCRA{Rate: algorithms.Rate{Count: %s, Period: %s}, Burst: %s}", limit, window, goInt(p.Burst)))
		case "token_bucket":
			parts = append(parts, fmt.Sprintf("algorithms.TokenBucket{Capacity: %s, Refill: algorithms.Rate{Count: %s, Period: %s}}", goInt(p.Burst), limit, window))
		}
	}
	code := strings.Join(parts, ", ")
	if len(parts) > 1 {
		return "ratewise.NewStack(store, []algorithms.Algorithm{" + code + "})"
	}
	return code
}

// goInt writes n as a Go literal, with underscores between thousands.
func goInt(n int64) string { return strings.ReplaceAll(report.Int(n), ",", "_") }

// goDuration writes d as a Go expression.
func goDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "24 * time.Hour"}, {time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d * time.Microsecond", d/time.Microsecond)
}

func extrapolatedText(e bool) string {
	if e {
		return ", measured on fewer records and scaled linearly"
	}
	return ""
}

// accuracy says how close an algorithm came to the limit on every matching
// workload.
func accuracy(f Figures) string {
	var parts []string
	for _, wl := range WorkloadNames {
		if v, ok := f.Overshoot[wl]; ok {
			parts = append(parts, fmt.Sprintf("%.2f× on %s", v, wl))
		}
	}
	return fmt.Sprintf("at most %s the limit in any window (%s), %s false admits and %s false denials against an exact log",
		worst(f.Overshoot), strings.Join(parts, ", "), report.Int(f.FalseAdmits), report.Int(f.FalseDenials))
}

func overshootOn(f Figures, wl string) string { return fmt.Sprintf("%.2f×", f.Overshoot[wl]) }

func worst(over map[string]float64) string {
	w := 0.0
	for _, v := range over {
		w = max(w, v)
	}
	return fmt.Sprintf("%.2f×", w)
}

// Bytes prints a size in B, KB, MB, GB or TB (powers of 1,000).
func Bytes(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%.3g TB", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%.3g GB", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.3g MB", b/1e6)
	case b >= 1e3:
		return fmt.Sprintf("%.3g KB", b/1e3)
	}
	return fmt.Sprintf("%.0f B", b)
}
