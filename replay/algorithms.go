package replay

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// ErrInvalidOption is wrapped by every error about an Options field that no
// algorithm can take as given, such as a number of sub-windows that does
// not split a workload's window evenly. Configure never adjusts an option
// that was set: it returns this error, naming the value and what would do.
var ErrInvalidOption = errors.New("replay: invalid option")

// AlgorithmNames lists the algorithms in the order compare shows them: the
// registry's (algorithms.Kinds), but for the calendar window, which counts
// per calendar period rather than per window: name it to replay it, with
// a window of a day, a week or a month (see Configure).
var AlgorithmNames = func() []string {
	var names []string
	for _, k := range algorithms.Kinds() {
		if algo.FamilyOf(k) != algo.FamilyCalendar {
			names = append(names, k.String())
		}
	}
	return names
}()

// DefaultSubWindows is how many sub-windows the sliding window counter
// uses unless told otherwise.
const DefaultSubWindows = 10

// Options tune the algorithms beyond their limit and window.
type Options struct {
	// SubWindows is the number of sub-windows of an algorithm that takes
	// them. 0 means DefaultSubWindows, or the largest smaller count that
	// splits the window evenly; any other count must split every
	// workload's window evenly into sub-windows of at least 1ms, or
	// Configure returns an error wrapping ErrInvalidOption.
	SubWindows int64
	// Burst is the burst (the token bucket's capacity) of an algorithm
	// that takes one; 0 means the limit.
	Burst int64
}

// Configure returns the named algorithm configured for limit per window, so
// that every algorithm enforces the same nominal limit: the windowed ones
// admit limit per window, and those with a burst are refilled at limit per
// window and admit a burst of opts.Burst, or of limit.
//
// An algorithm with sub-windows uses opts.SubWindows, which must split the
// window evenly: 7 sub-windows of a minute is an error wrapping
// ErrInvalidOption that names 6 and 8, the nearest counts that do. When
// opts.SubWindows is 0 it uses DefaultSubWindows, or, if that does not
// split the window, the largest smaller count that does; the count chosen
// is in the algorithm's Params.
//
// The calendar window counts limit per calendar period in UTC: a window of
// 24h is the day, 168h the week, and 28 to 31 whole days the month; any
// other window is an error wrapping ErrInvalidOption.
func Configure(name string, limit int64, window time.Duration, opts Options) (algorithms.Algorithm, error) {
	k, err := algorithms.Lookup(name)
	if err != nil {
		return nil, err
	}
	if opts.SubWindows < 0 {
		return nil, fmt.Errorf(
			"%w: sub-windows must be >= 1, or 0 for the default, got %d",
			ErrInvalidOption,
			opts.SubWindows,
		)
	}
	if algo.FamilyOf(k) == algo.FamilyCalendar {
		return calendar(k, limit, window)
	}
	if opts.Burst < 0 {
		return nil, fmt.Errorf("%w: burst must be >= 1, or 0 for the limit, got %d", ErrInvalidOption, opts.Burst)
	}
	p := algorithms.Params{Limit: limit, Window: window}
	if algo.TakesBurst(k) {
		p.Burst = opts.Burst
		if p.Burst == 0 {
			p.Burst = limit
		}
	}
	if !algo.TakesSubWindows(k) {
		return k.New(p)
	}
	if opts.SubWindows != 0 {
		// The limit and window alone first, so that only a count of
		// sub-windows that does not split the window is explained as one.
		one := p
		one.SubWindows = 1
		if _, err := k.New(one); err != nil {
			return nil, err
		}
		p.SubWindows = opts.SubWindows
		alg, err := k.New(p)
		if errors.Is(err, algorithms.ErrInvalidAlgorithm) {
			return nil, subWindowsError(k, p)
		}
		return alg, err
	}
	for p.SubWindows = DefaultSubWindows; p.SubWindows > 1; p.SubWindows-- {
		if _, err := k.New(p); err == nil {
			break
		}
	}
	return k.New(p)
}

// subWindowsError explains why p.SubWindows does not suit p.Window, naming
// the nearest counts below and above it that do, if any: the nearest above
// is looked for up to twice the count.
func subWindowsError(k *algorithms.Kind, p algorithms.Params) error {
	fits := func(n int64) bool {
		q := p
		q.SubWindows = n
		_, err := k.New(q)
		return err == nil
	}
	n := p.SubWindows
	var near []string
	for m := n - 1; m >= 1; m-- {
		if fits(m) {
			near = append(near, fmt.Sprint(m))
			break
		}
	}
	for m := n + 1; m <= 2*n; m++ {
		if fits(m) {
			near = append(near, fmt.Sprint(m))
			break
		}
	}
	msg := fmt.Sprintf("%d sub-windows do not split the window %v evenly into sub-windows of at least 1ms", n, p.Window)
	switch len(near) {
	case 1:
		msg += "; the nearest count that does is " + near[0]
	case 2:
		msg += "; the nearest counts that do are " + near[0] + " and " + near[1]
	}
	return fmt.Errorf("%w: %s", ErrInvalidOption, msg)
}

// ParseAlgorithms splits a comma-separated list of algorithm names; "all"
// or "" is every algorithm.
func ParseAlgorithms(list string) ([]string, error) {
	if list == "" || list == "all" {
		return AlgorithmNames, nil
	}
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.ReplaceAll(strings.TrimSpace(n), "-", "_")
		if _, err := algorithms.Lookup(n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}

// calendar returns the calendar window of limit per the calendar period
// window stands for (see Configure).
func calendar(k *algorithms.Kind, limit int64, window time.Duration) (algorithms.Algorithm, error) {
	const day = 24 * time.Hour
	p := algorithms.Params{Limit: limit}
	switch {
	case window == day:
		p.Period = "day"
	case window == 7*day:
		p.Period = "week"
	case window >= 28*day && window <= 31*day && window%day == 0:
		p.Period = "month"
	default:
		return nil, fmt.Errorf(
			"%w: %s counts calendar days, weeks or months: give a window of 24h, 168h or 28 to 31 days, not %v",
			ErrInvalidOption, k, window)
	}
	return k.New(p)
}
