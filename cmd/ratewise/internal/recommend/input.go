package recommend

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
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
	QPS float64 // requests per second each key may make
	// TotalQPS is the rate of all keys together when the question gave it
	// (--total-qps), and QPS its even share per key, rounded to a whole
	// count per window; 0 when the question gave QPS itself (--qps).
	TotalQPS float64
	// Asked is the rate as the question gave it, such as "--qps 5/15m" or
	// "--total-qps 5000", for the output to quote; "" quotes QPS or
	// TotalQPS as a number.
	Asked     string
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

// asked returns the rate as the question gave it: in.Asked, or the flag
// and its value, "--qps 5000" or "--total-qps 5000".
func (in Input) asked() string {
	switch {
	case in.Asked != "":
		return in.Asked
	case in.TotalQPS > 0:
		return fmt.Sprintf("--total-qps %g", in.TotalQPS)
	}
	return fmt.Sprintf("--qps %g", in.QPS)
}

// perKey names the rate per key in an error: --qps, or the share of
// --total-qps.
func (in Input) perKey() string {
	if in.TotalQPS > 0 {
		return fmt.Sprintf("%s among %s keys, %g per key,", in.asked(), report.Int(in.Keys), in.QPS)
	}
	return fmt.Sprintf("--qps %g", in.QPS)
}

// ShareTotal sets TotalQPS to total, the rate of all keys together, and
// QPS to its even share among in.Keys, rounded to a whole count per
// in.Window: a total of 5000 per second among 100,000 keys is 0.05 per
// second, 3 per minute, each. in.Keys and in.Window must be set. A share of
// less than one request per window is an error wrapping ErrInvalid.
func (in *Input) ShareTotal(total float64) error {
	switch {
	case total <= 0 || math.IsNaN(total) || math.IsInf(total, 0):
		return fmt.Errorf("%w: --total-qps must be > 0, got %g", ErrInvalid, total)
	case in.Keys < 1:
		return fmt.Errorf("%w: --keys must be >= 1, got %d", ErrInvalid, in.Keys)
	case in.Window < time.Millisecond:
		return fmt.Errorf("%w: --window must be at least 1ms, got %v", ErrInvalid, in.Window)
	}
	in.TotalQPS = total
	share := total * in.Window.Seconds() / float64(in.Keys)
	limit := math.Round(share)
	if limit < 1 {
		return fmt.Errorf(
			"%w: %s among %s keys is %.3g requests per key per %s, less than one: give a longer --window or "+
				"fewer --keys",
			ErrInvalid,
			in.asked(),
			report.Int(in.Keys),
			share,
			report.Duration(in.Window),
		)
	}
	in.QPS = limit / in.Window.Seconds()
	return nil
}

// Validate checks the input.
func (in Input) Validate() error {
	switch {
	case in.QPS <= 0 || math.IsNaN(in.QPS) || math.IsInf(in.QPS, 0):
		return fmt.Errorf("%w: --qps must be > 0, got %g", ErrInvalid, in.QPS)
	case in.TotalQPS < 0 || math.IsNaN(in.TotalQPS) || math.IsInf(in.TotalQPS, 0):
		return fmt.Errorf("%w: --total-qps must be > 0, got %g", ErrInvalid, in.TotalQPS)
	case in.Window < time.Millisecond:
		return fmt.Errorf("%w: --window must be at least 1ms, got %v", ErrInvalid, in.Window)
	case in.Limit() < 1:
		return fmt.Errorf("%w: %s over --window %v is less than one request", ErrInvalid, in.perKey(), in.Window)
	case math.Abs(in.QPS*in.Window.Seconds()-float64(in.Limit())) > 1e-3*float64(in.Limit()):
		return fmt.Errorf(
			"%w: --qps %g over --window %v is %.4g requests, and a limit is a whole count: give the rate as a count "+
				"per period, such as --qps %d/%s",
			ErrInvalid,
			in.QPS,
			in.Window,
			in.QPS*in.Window.Seconds(),
			max(1, in.Limit()),
			report.Duration(in.Window),
		)
	case in.Limit() > 1<<40:
		return fmt.Errorf(
			"%w: %s over --window %v is %d requests, too many to keep a record of",
			ErrInvalid,
			in.perKey(),
			in.Window,
			in.Limit(),
		)
	case in.Calendar == "" && in.Precision != "exact" && in.Precision != "approx":
		return fmt.Errorf("%w: --precision must be exact or approx, got %q", ErrInvalid, in.Precision)
	case in.Calendar != "" && in.Calendar != Day && in.Calendar != Month:
		return fmt.Errorf("%w: --calendar must be day or month, got %q", ErrInvalid, in.Calendar)
	case in.Calendar == Day && in.Window != 24*time.Hour:
		return fmt.Errorf(
			"%w: --calendar day counts whole UTC days: give the quota per day, such as --qps 10000/day, and no other "+
				"--window (got %v)",
			ErrInvalid,
			in.Window,
		)
	case in.Calendar == Month && in.Window != MonthWindow:
		return fmt.Errorf(
			"%w: --calendar month counts whole calendar months: give the quota per month, such as --qps 10000/month, "+
				"and no other --window (got %v)",
			ErrInvalid,
			in.Window,
		)
	case in.Keys < 1:
		return fmt.Errorf("%w: --keys must be >= 1, got %d", ErrInvalid, in.Keys)
	case in.Burst < 0:
		return fmt.Errorf("%w: --burst must be >= 0, got %d", ErrInvalid, in.Burst)
	case in.Burst > in.Limit():
		return fmt.Errorf(
			"%w: --burst %d exceeds the limit of %d per %s: a key can never send more at once than a whole window "+
				"allows; raise the limit or lower the burst",
			ErrInvalid,
			in.Burst,
			in.Limit(),
			report.Duration(in.Window),
		)
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
