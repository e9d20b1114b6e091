package pgsql

import (
	"fmt"
	"time"

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

// Fields are a step's Result in µs, as the statements return them.
type Fields struct {
	Allowed                     bool
	Remaining, Retry, Reset, At int64
}

// Result checks f, a decision's fields under a limit of limit decided no
// earlier than notBefore µs, and returns it as a Result, or an error
// saying which field is out of range: a state no decision wrote, or a
// function that is not this version's, must not turn into an admission.
func (f Fields) Result(limit, notBefore int64) (algorithms.Result, error) {
	switch {
	case f.Remaining < 0 || f.Remaining > limit:
		return algorithms.Result{}, fmt.Errorf("remaining %d outside [0, %d]", f.Remaining, limit)
	case f.Allowed != (f.Retry == 0) || f.Retry < 0:
		return algorithms.Result{}, fmt.Errorf("allowed %v with retry_after %d", f.Allowed, f.Retry)
	case f.Reset < 0:
		return algorithms.Result{}, fmt.Errorf("reset_after %d", f.Reset)
	case f.At < notBefore || f.At < 0:
		return algorithms.Result{}, fmt.Errorf("decided at %d, before %d", f.At, max(notBefore, 0))
	}
	return algorithms.Result{
		Allowed:    f.Allowed,
		Limit:      limit,
		Remaining:  f.Remaining,
		RetryAfter: time.Duration(f.Retry) * time.Microsecond,
		ResetAfter: time.Duration(f.Reset) * time.Microsecond,
		At:         time.UnixMicro(f.At),
	}, nil
}
