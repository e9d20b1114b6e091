// Package recommend turns the classic decision tree for rate limiters (a
// fixed window counter for simple quotas, a sliding log on a sorted set up
// to about 1,000 QPS with a window up to about 10 s, a sliding window
// counter up to about 10,000 QPS, a token bucket or GCRA beyond) into rules
// over measured figures: given a rate, a window, a precision and a number
// of keys, it picks an algorithm and gives the measurements behind each
// reason, and says where the classic thresholds disagree with them.
package recommend

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// ErrInvalid is wrapped by every error about recommend's input.
var ErrInvalid = errors.New("recommend: invalid input")

// Input is what the user asks for.
type Input struct {
	QPS       float64       // requests per second each key may make
	Window    time.Duration // the window the limit is counted over
	Precision string        // "exact" or "approx"
	Keys      int64         // keys active at once
	Burst     int64         // the most requests a key may send at once; 0 for a whole window's limit
	// MemoryBudget is the most memory the limiter's state may take, in
	// bytes; LatencyBudget the slowest p99 a decision may take.
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
	case in.Limit() > 1<<40:
		return fmt.Errorf("%w: --qps %g over --window %v is %d requests, too many to keep a record of", ErrInvalid, in.QPS, in.Window, in.Limit())
	case in.Precision != "exact" && in.Precision != "approx":
		return fmt.Errorf("%w: --precision must be exact or approx, got %q", ErrInvalid, in.Precision)
	case in.Keys < 1:
		return fmt.Errorf("%w: --keys must be >= 1, got %d", ErrInvalid, in.Keys)
	case in.Burst < 0:
		return fmt.Errorf("%w: --burst must be >= 0, got %d", ErrInvalid, in.Burst)
	case in.MemoryBudget <= 0:
		return fmt.Errorf("%w: --memory must be > 0, got %d", ErrInvalid, in.MemoryBudget)
	case in.LatencyBudget <= 0:
		return fmt.Errorf("%w: --latency must be > 0, got %v", ErrInvalid, in.LatencyBudget)
	}
	return nil
}

// Figures are what was measured for one algorithm at the input's size.
type Figures struct {
	Algorithm string
	// BytesPerKey is the memory one key holds with a full window, on
	// Store; Extrapolated says it was measured on fewer records and scaled.
	BytesPerKey  float64
	Store        string
	Extrapolated bool
	// P50 and P99 are decision latencies on a key with a full window.
	P50, P99 time.Duration
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

// ClassicTree states, in a phrase, the classic decision tree that
// Decision.Classic follows.
var ClassicTree = fmt.Sprintf("exact: a sliding log; approximate: a sliding window counter up to QPS %s, a token bucket or GCRA above",
	report.Int(classicCounterQPS))

// Decision is a recommendation with its reasons.
type Decision struct {
	Algorithm string
	Reasons   []string
	// Classic is what the classic decision tree would pick; Disagreements
	// say where the measurements part from the classic thresholds.
	Classic       string
	Disagreements []string
}

// classicPick is the classic decision tree's pick: the sliding log for an
// exact count (Decide weighs its QPS and window thresholds against the
// measurements), the sliding window counter for an approximate one up to
// classicCounterQPS, and GCRA (a leaky bucket) above it.
func classicPick(in Input) string {
	if in.Precision == "exact" {
		return "sliding_log"
	}
	if in.QPS > classicCounterQPS {
		return "gcra"
	}
	return "sliding_window"
}

// fits reports whether an algorithm's measured cost is within the budgets.
func fits(in Input, f Figures) bool {
	return f.TotalBytes(in.Keys) <= float64(in.MemoryBudget) && f.P99 <= in.LatencyBudget
}

// Decide applies the rules to the figures, keyed by algorithm name. It
// needs figures for sliding_log, sliding_window, gcra and fixed_window.
func Decide(in Input, figs map[string]Figures) (Decision, error) {
	for _, name := range []string{"fixed_window", "sliding_log", "sliding_window", "gcra"} {
		if _, ok := figs[name]; !ok {
			return Decision{}, fmt.Errorf("recommend: no figures for %s", name)
		}
	}
	log, counter, gcra, fixed := figs["sliding_log"], figs["sliding_window"], figs["gcra"], figs["fixed_window"]
	d := Decision{Classic: classicPick(in)}
	budget := func(f Figures) string {
		return fmt.Sprintf("%s per key on %s%s; %s for %s keys against a budget of %s; p99 %v against %v",
			Bytes(f.BytesPerKey), f.Store, extrapolated(f), Bytes(f.TotalBytes(in.Keys)), report.Int(in.Keys), Bytes(float64(in.MemoryBudget)), report.Latency(f.P99), report.Latency(in.LatencyBudget))
	}
	accuracy := func(f Figures) string {
		return fmt.Sprintf("at most %s the limit in any window on the matching workloads, %s false admits and %s false denials against an exact log",
			worst(f.Overshoot), report.Int(f.FalseAdmits), report.Int(f.FalseDenials))
	}

	compact, haveCompact := figs["compact_log"]
	switch {
	case in.Precision == "exact" && haveCompact && fits(in, compact):
		d.Algorithm = "compact_log"
		d.Reasons = append(d.Reasons,
			"precision: exact was asked for; the compact log decides exactly as the sliding log, counting every request: "+accuracy(compact)+
				fmt.Sprintf("; the fixed window reached %s", worst(fixed.Overshoot)),
			fmt.Sprintf("memory: a full window is %s records, one 8-byte timestamp each: %s; the sorted-set log would take %s per key",
				report.Int(in.Limit()), budget(compact), Bytes(log.BytesPerKey)))
	case in.Precision == "exact" && fits(in, log):
		d.Algorithm = "sliding_log"
		d.Reasons = append(d.Reasons,
			"precision: exact was asked for, and only the sliding log counts every request: "+accuracy(log)+
				fmt.Sprintf("; the fixed window reached %s", worst(fixed.Overshoot)),
			fmt.Sprintf("memory: a full window is %s records, %s", report.Int(in.Limit()), budget(log)))
	case in.Precision == "exact":
		d.Algorithm = "sliding_window"
		d.Reasons = append(d.Reasons,
			fmt.Sprintf("budget: an exact sliding log of %s records per key does not fit: %s%s", report.Int(in.Limit()), budget(log), compactMiss(in, compact, haveCompact, budget)),
			"precision: the sliding window counter is the nearest approximation: "+accuracy(counter),
			"memory: "+budget(counter))
	case in.Burst > 0 && fits(in, gcra):
		d.Algorithm = "gcra"
		d.Reasons = append(d.Reasons,
			fmt.Sprintf("burst: bursts of at most %s at a sustained %g per second are exactly GCRA's two parameters (GCRA{Rate: %s per %s, Burst: %s}); a window counter admits its whole limit of %s at once",
				report.Int(in.Burst), in.QPS, report.Int(in.Limit()), report.Duration(in.Window), report.Int(in.Burst), report.Int(in.Limit())),
			"precision: "+accuracy(gcra),
			"memory: "+budget(gcra))
	case fits(in, counter):
		d.Algorithm = "sliding_window"
		d.Reasons = append(d.Reasons,
			"precision: approximate was asked for; the sliding window counter keeps the window's meaning: "+accuracy(counter)+
				fmt.Sprintf("; the fixed window reached %s", worst(fixed.Overshoot)),
			"memory: "+budget(counter)+"; it does not grow with the rate")
	default:
		d.Algorithm = "gcra"
		d.Reasons = append(d.Reasons,
			"budget: the sliding window counter does not fit: "+budget(counter),
			"memory: GCRA keeps one timestamp per key: "+budget(gcra),
			"precision: "+accuracy(gcra))
	}

	// Where the classic thresholds and the measurements part.
	if in.Precision == "exact" {
		classicOK := !(in.QPS > classicSortedSetQPS && in.Window > classicSortedSetWindow)
		measuredOK := fits(in, log)
		switch {
		case !classicOK && measuredOK:
			d.Disagreements = append(d.Disagreements, fmt.Sprintf(
				"the classic thresholds rule the sorted set out above QPS %s with a window over %v; measured here, %s records per key cost %s with p99 %v, within the budgets for %s keys: memory per busy key and the number of keys decide, not QPS alone",
				report.Int(classicSortedSetQPS), report.Duration(classicSortedSetWindow), report.Int(in.Limit()), Bytes(log.BytesPerKey), report.Latency(log.P99), report.Int(in.Keys)))
		case classicOK && !measuredOK:
			d.Disagreements = append(d.Disagreements, fmt.Sprintf(
				"the classic thresholds allow the sorted set at QPS %g over %v, but for %s keys it needs %s, over the %s budget: a threshold on QPS and window alone ignores the number of keys",
				in.QPS, report.Duration(in.Window), report.Int(in.Keys), Bytes(log.TotalBytes(in.Keys)), Bytes(float64(in.MemoryBudget))))
		}
	} else if in.QPS > classicCounterQPS && fits(in, counter) {
		d.Disagreements = append(d.Disagreements, fmt.Sprintf(
			"the classic thresholds send QPS above %s to a token or leaky bucket; measured here the sliding window counter costs %s per key and p99 %v whatever the rate, so QPS alone does not rule it out",
			report.Int(classicCounterQPS), Bytes(counter.BytesPerKey), report.Latency(counter.P99)))
	}
	return d, nil
}

func extrapolated(f Figures) string {
	if f.Extrapolated {
		return " (measured on fewer records and scaled linearly)"
	}
	return ""
}

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

// compactMiss says why the compact log does not fit either, for a reason
// that rules the exact logs out.
func compactMiss(in Input, compact Figures, have bool, budget func(Figures) string) string {
	if !have {
		return fmt.Sprintf("; nor does the compact log, which takes at most %s records per key", report.Int(algorithms.CompactLogMaxLimit))
	}
	return "; nor does the compact log: " + budget(compact)
}
