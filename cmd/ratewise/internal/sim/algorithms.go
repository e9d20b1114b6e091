// Package sim replays workloads against rate-limiting algorithms on real
// stores and measures what each algorithm decided and what it cost: the
// figures behind ratewise compare and ratewise recommend.
package sim

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// ErrUnknownAlgorithm is returned for an algorithm name compare does not know.
var ErrUnknownAlgorithm = errors.New("sim: unknown algorithm")

// AlgorithmNames lists the algorithms in the order compare shows them.
var AlgorithmNames = []string{"fixed_window", "sliding_log", "sliding_window", "token_bucket", "gcra"}

// DefaultSubWindows is how many sub-windows the sliding window counter
// uses unless told otherwise.
const DefaultSubWindows = 10

// Options tune the algorithms beyond their limit and window.
type Options struct {
	// SubWindows is the sliding window counter's number of sub-windows;
	// 0 means DefaultSubWindows.
	SubWindows int64
	// Burst is the token bucket's capacity and GCRA's burst; 0 means the
	// limit.
	Burst int64
}

// Configure returns the named algorithm configured for limit per window, so
// that every algorithm enforces the same nominal limit: the windowed ones
// admit limit per window, and the token bucket and GCRA are refilled at
// limit per window and admit a burst of opts.Burst, or of limit. The sliding
// window counter uses opts.SubWindows sub-windows, or the largest smaller
// count that divides the window evenly.
func Configure(name string, limit int64, window time.Duration, opts Options) (algorithms.Algorithm, error) {
	rate := algorithms.Rate{Count: limit, Period: window}
	subWindows := opts.SubWindows
	if subWindows == 0 {
		subWindows = DefaultSubWindows
	}
	burst := opts.Burst
	if burst == 0 {
		burst = limit
	}
	var alg algorithms.Algorithm
	switch name {
	case "fixed_window":
		alg = algorithms.FixedWindow{Limit: limit, Window: window}
	case "sliding_log":
		alg = algorithms.SlidingLog{Limit: limit, Window: window}
	case "sliding_window":
		n := max(subWindows, 1)
		for n > 1 && (algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: n}).Validate() != nil {
			n--
		}
		alg = algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: n}
	case "token_bucket":
		alg = algorithms.TokenBucket{Capacity: burst, Refill: rate}
	case "gcra":
		alg = algorithms.GCRA{Rate: rate, Burst: burst}
	default:
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownAlgorithm, name, strings.Join(AlgorithmNames, ", "))
	}
	if err := alg.Validate(); err != nil {
		return nil, err
	}
	return alg, nil
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
		if _, err := Configure(n, 1, time.Second, Options{}); errors.Is(err, ErrUnknownAlgorithm) {
			return nil, err
		}
		names = append(names, n)
	}
	return names, nil
}
