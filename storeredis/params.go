package storeredis

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
)

// stepParams are the parameters a kind's Lua step takes, in the order of
// algorithms.Params: the limit, the window in µs, then the burst or the
// sub-windows if the kind takes them; n says how many there are. A
// calendar window's depend on the caller's now: the limit, the boundary
// nearest it and the lengths about it (algo.CalendarParams); a zero now
// reads the system clock, as it does for a store on Redis's clock, whose
// callers need not read one.
type stepParams struct {
	v [3]int64
	n int
}

// paramsAt returns alg's step parameters for a request made at now.
func paramsAt(alg algorithms.Algorithm, now time.Time) stepParams {
	if a, ok := alg.(algorithms.CalendarWindow); ok {
		b, packed := algo.CalendarParams(a, storecheck.Now(now).UnixMicro())
		return stepParams{v: [3]int64{a.Limit, b, packed}, n: 3}
	}
	p, k := algo.ParamsOf(alg), alg.Kind()
	ps := stepParams{v: [3]int64{p.Limit, p.Window.Microseconds()}, n: 2}
	if algo.TakesBurst(k) {
		ps.v[ps.n], ps.n = p.Burst, ps.n+1
	}
	if algo.TakesSubWindows(k) {
		ps.v[ps.n], ps.n = p.SubWindows, ps.n+1
	}
	return ps
}

// appendParams appends the parameters alg's step takes for a request made
// at now (see stepParams).
func appendParams(args []any, alg algorithms.Algorithm, now time.Time) []any {
	ps := paramsAt(alg, now)
	for _, v := range ps.v[:ps.n] {
		args = append(args, v)
	}
	return args
}

// appendOnceParams appends alg's parameters as appendParams does, then an
// empty string for each a kind may take and alg's does not, to four: the
// layout of a request with a once key, whose limit follows them.
func appendOnceParams(args []any, alg algorithms.Algorithm, now time.Time) []any {
	n := len(args)
	args = appendParams(args, alg, now)
	for len(args) < n+4 {
		args = append(args, "")
	}
	return args
}

// paramCount is how many parameters appendParams appends for alg.
func paramCount(alg algorithms.Algorithm) int {
	if _, ok := alg.(algorithms.CalendarWindow); ok {
		return 3
	}
	n, k := 2, alg.Kind()
	if algo.TakesBurst(k) {
		n++
	}
	if algo.TakesSubWindows(k) {
		n++
	}
	return n
}

// sameParams reports whether algs' step parameters are the same for a
// request made at a and one made at b: those of a calendar window may
// differ, every other kind's are its own.
func sameParams(algs []algorithms.Algorithm, a, b time.Time) bool {
	for _, alg := range algs {
		if _, ok := alg.(algorithms.CalendarWindow); ok && paramsAt(alg, a) != paramsAt(alg, b) {
			return false
		}
	}
	return true
}
