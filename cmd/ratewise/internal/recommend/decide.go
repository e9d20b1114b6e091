package recommend

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

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
