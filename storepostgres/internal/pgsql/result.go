package pgsql

import (
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// Params returns alg's parameters as a step takes them: limit (or rate
// count), window (or period) in µs, and the burst or the sub-windows, nil
// for a kind that takes neither.
func Params(alg algorithms.Algorithm) (p1, p2 int64, p3 *int64) {
	p, k := algo.ParamsOf(alg), alg.Kind()
	switch {
	case algo.TakesBurst(k):
		p3 = &p.Burst
	case algo.TakesSubWindows(k):
		p3 = &p.SubWindows
	}
	return p.Limit, p.Window.Microseconds(), p3
}
