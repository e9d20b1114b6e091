package pgsql

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
)

// Params returns alg's parameters as a step takes them: limit (or rate
// count), window (or period) in µs, and the burst or the sub-windows, nil
// for a kind that takes neither. A calendar window's depend on the
// caller's now: the limit, the boundary between two periods nearest now,
// and the lengths about it (algo.CalendarParams); a zero now reads the
// system clock, as for a store on the server's clock, whose callers need
// not read one.
func Params(alg algorithms.Algorithm, now time.Time) (p1, p2 int64, p3 *int64) {
	if a, ok := alg.(algorithms.CalendarWindow); ok {
		b, packed := algo.CalendarParams(a, storecheck.Now(now).UnixMicro())
		return a.Limit, b, &packed
	}
	p, k := algo.ParamsOf(alg), alg.Kind()
	switch {
	case algo.TakesBurst(k):
		p3 = &p.Burst
	case algo.TakesSubWindows(k):
		p3 = &p.SubWindows
	}
	return p.Limit, p.Window.Microseconds(), p3
}
