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
var ClassicTree = fmt.Sprintf(
	"calendar quotas: a fixed window; exact: a sliding log; approximate: a sliding window counter up to QPS %s, "+
		"a token bucket or GCRA above",
	report.Int(classicCounterQPS),
)

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

// classicPick is the classic decision tree's pick: the classic form of the
// role it names (see catalog.measured). Above the counter's threshold it
// names a role, not a form ("a token bucket or GCRA"), and is given the
// kind recommend prefers.
func (cat catalog) classicPick(in Input, figs map[string]Figures) string {
	switch {
	case in.Calendar != "":
		return cat.classic(fixedWindow, figs).name
	case in.Precision == "exact":
		return cat.classic(exactLog, figs).name
	case in.QPS > classicCounterQPS:
		return cat.preferred(bucket, figs).name
	}
	return cat.classic(counter, figs).name
}

// candidate is one answer to the question: an algorithm, or a set of two
// limits checked together.
type candidate struct {
	kinds []kind
	// exact is whether the candidate counts exactly what was asked.
	exact bool
}

func (c candidate) name() string {
	names := make([]string, len(c.kinds))
	for i, k := range c.kinds {
		names[i] = k.name
	}
	return strings.Join(names, " + ")
}

// candidates lists the answers to the question in the order they are
// preferred: every kind of the role that answers it (see
// catalog.measured), then the preferred kind of each fallback. An exact
// count with a smaller burst is an exact log and a bucket as a set; the
// approximations follow the exact candidates, so that an exact question
// falls back to the nearest approximation.
func (cat catalog) candidates(in Input, figs map[string]Figures) []candidate {
	burst := cat.preferred(bucket, figs)
	var out []candidate
	add := func(exact bool, ks ...kind) {
		for _, k := range ks {
			// A window counts a whole window's limit at once: a smaller
			// burst needs a kind that takes one beside it.
			if in.limitsBurst() && !k.burst {
				out = append(out, candidate{kinds: []kind{k, burst}, exact: exact})
				continue
			}
			out = append(out, candidate{kinds: []kind{k}, exact: exact})
		}
	}
	switch {
	case in.Calendar != "":
		// The calendar window is the quota itself; the windowed recipes
		// that count it exactly in UTC follow, for a budget it does not fit.
		add(true, cat.measured(calendar, figs)...)
		if in.Calendar == Day {
			add(true, cat.measured(fixedWindow, figs)...)
		} else {
			add(true, cat.measured(counter, figs)...)
		}
	case in.Precision == "exact":
		add(true, cat.measured(exactLog, figs)...)
		add(false, cat.preferred(counter, figs))
		add(false, burst)
	case in.Burst > 0:
		add(true, cat.measured(bucket, figs)...)
	default:
		add(true, cat.measured(counter, figs)...)
		add(true, burst)
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
	for _, k := range c.kinds {
		f := figs[k.name]
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
	memText := fmt.Sprintf(
		"%s for %s (%s per key on %s%s) against the %s budget",
		Bytes(
			v.bytes,
		),
		report.Keys(in.Keys),
		Bytes(v.perKey),
		v.store,
		extrapolatedText(v.extrapolated),
		Bytes(float64(in.MemoryBudget)),
	)
	timeText := fmt.Sprintf(
		"a decision takes %s in %s against the %s budget",
		v.time,
		v.store,
		report.Latency(in.LatencyBudget),
	)
	if mem > 1 {
		v.failed = append(v.failed, "memory: "+memText)
	}
	if tm > 1 {
		v.failed = append(v.failed, "time: "+timeText)
	}
	if math.Abs(mem-1) <= memoryMargin {
		v.close_ = append(
			v.close_,
			fmt.Sprintf("%s's memory, %s, is within %.0f%% of the budget", c.name(), memText, 100*memoryMargin),
		)
	}
	if math.Abs(tm-1) <= timeMargin || (v.time.Min <= in.LatencyBudget && in.LatencyBudget <= v.time.Max) {
		v.close_ = append(
			v.close_,
			fmt.Sprintf(
				"%s's time, %s, is within %.0f%% of the budget or its samples straddle it",
				c.name(),
				timeText,
				100*timeMargin,
			),
		)
	}
	return v
}

// Choose applies the rules to the figures, keyed by algorithm name, for
// the algorithms of the registry. It needs figures for a kind of every
// role the rules use (a fixed window, an exact log, a sliding window
// counter and a bucket, and for a calendar quota a calendar window); a
// kind without figures, such as the compact log beyond its largest limit,
// is no candidate.
func Choose(in Input, figs map[string]Figures) (Decision, error) { return registry.choose(in, figs) }

func (cat catalog) choose(in Input, figs map[string]Figures) (Decision, error) {
	if err := cat.needs(in, figs); err != nil {
		return Decision{}, err
	}
	d := Decision{Classic: cat.classicPick(in, figs)}
	var chosen *verdict
	var tried []verdict
	for _, c := range cat.candidates(in, figs) {
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
		d.Reasons = append(
			d.Reasons,
			fmt.Sprintf(
				"budget: no candidate fits both the memory and the time budget; the closest, %s, is at %.2f× its "+
					"tightest budget. Raise a budget, or lower the rate, window or keys",
				best.c.name(),
				best.over,
			),
		)
		d.Config = configOf(in, best.c)
		d.Disagreements = cat.disagreements(in, figs)
		return d, nil
	}
	d.Algorithm = chosen.c.name()
	d.Config = configOf(in, chosen.c)
	d.Reasons = cat.reasons(in, *chosen, figs)
	d.Disagreements = cat.disagreements(in, figs)
	return d, nil
}
