package replay

import (
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// ErrUnknownAlgorithm is returned for an algorithm name not in the
// registry. It is algorithms.ErrUnknownAlgorithm.
var ErrUnknownAlgorithm = algorithms.ErrUnknownAlgorithm

// AlgorithmNames lists the algorithms in the order compare shows them: the
// registry's (algorithms.Kinds).
var AlgorithmNames = algorithms.Names()

// DefaultSubWindows is how many sub-windows the sliding window counter
// uses unless told otherwise.
const DefaultSubWindows = 10

// Options tune the algorithms beyond their limit and window.
type Options struct {
	// SubWindows is the number of sub-windows of an algorithm that takes
	// them; 0 means DefaultSubWindows.
	SubWindows int64
	// Burst is the burst (the token bucket's capacity) of an algorithm
	// that takes one; 0 means the limit.
	Burst int64
}

// Configure returns the named algorithm configured for limit per window, so
// that every algorithm enforces the same nominal limit: the windowed ones
// admit limit per window, and those with a burst are refilled at limit per
// window and admit a burst of opts.Burst, or of limit. An algorithm with
// sub-windows uses opts.SubWindows, or the largest smaller count that
// divides the window evenly.
func Configure(name string, limit int64, window time.Duration, opts Options) (algorithms.Algorithm, error) {
	k, err := algorithms.Lookup(name)
	if err != nil {
		return nil, err
	}
	p := algorithms.Params{Limit: limit, Window: window}
	if k.TakesBurst() {
		p.Burst = opts.Burst
		if p.Burst == 0 {
			p.Burst = limit
		}
	}
	if !k.TakesSubWindows() {
		return k.New(p)
	}
	n := opts.SubWindows
	if n == 0 {
		n = DefaultSubWindows
	}
	for p.SubWindows = max(n, 1); p.SubWindows > 1; p.SubWindows-- {
		if _, err := k.New(p); err == nil {
			break
		}
	}
	return k.New(p)
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
