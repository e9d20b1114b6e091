package storeredis

import (
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// appendParams appends the parameters alg's kind takes, in the order of
// algorithms.Params: limit, window in µs, then the burst and the
// sub-windows if the kind takes them.
func appendParams(args []any, alg algorithms.Algorithm) []any {
	p, k := algo.ParamsOf(alg), alg.Kind()
	args = append(args, p.Limit, p.Window.Microseconds())
	if algo.TakesBurst(k) {
		args = append(args, p.Burst)
	}
	if algo.TakesSubWindows(k) {
		args = append(args, p.SubWindows)
	}
	return args
}

// appendOnceParams appends alg's parameters as appendParams does, then an
// empty string for each a kind may take and alg's does not, to four: the
// layout of a request with a once key, whose limit follows them.
func appendOnceParams(args []any, alg algorithms.Algorithm) []any {
	n := len(args)
	args = appendParams(args, alg)
	for len(args) < n+4 {
		args = append(args, "")
	}
	return args
}

// paramCount is how many parameters appendParams appends for alg.
func paramCount(alg algorithms.Algorithm) int {
	n, k := 2, alg.Kind()
	if algo.TakesBurst(k) {
		n++
	}
	if algo.TakesSubWindows(k) {
		n++
	}
	return n
}
