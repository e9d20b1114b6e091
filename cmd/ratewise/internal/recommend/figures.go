package recommend

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// Spread is a figure measured several times: the median and the range.
type Spread struct {
	Median, Min, Max time.Duration
	Samples          int
}

func (s Spread) String() string {
	if s.Samples <= 1 {
		return report.Latency(s.Median)
	}
	return fmt.Sprintf(
		"%s (median of %d samples, %s–%s)",
		report.Latency(s.Median),
		s.Samples,
		report.Latency(s.Min),
		report.Latency(s.Max),
	)
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
	return fmt.Sprintf(
		"at most %s the limit in any window (%s), %s false admits and %s false denials against an exact log",
		worst(f.Overshoot),
		strings.Join(parts, ", "),
		report.Int(f.FalseAdmits),
		report.Int(f.FalseDenials),
	)
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
