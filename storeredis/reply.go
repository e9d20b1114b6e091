package storeredis

import (
	"errors"
	"fmt"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// ErrMalformedReply is wrapped (with store.ErrUnavailable) when a script's
// reply is not a valid decision.
var ErrMalformedReply = errors.New("storeredis: malformed script reply")

// A parser reads a script's reply into its op's outcome, or returns what is
// wrong with it: a plain error, which parse wraps.
type parser interface {
	parse(reply any) error
}

// parse is the parse step of every op, a decision in a batch's included:
// a reply p does not accept fails with store.ErrUnavailable and
// ErrMalformedReply, never reads as "allowed". It is the one place a reply
// becomes ErrMalformedReply.
func parse(p parser, reply any) error {
	if err := p.parse(reply); err != nil {
		return fmt.Errorf("%w: %w: %w", store.ErrUnavailable, ErrMalformedReply, err)
	}
	return nil
}

// fieldsOf returns reply as an array of n fields.
func fieldsOf(reply any, n int) ([]any, error) {
	fields, ok := reply.([]any)
	if !ok || len(fields) != n {
		return nil, fmt.Errorf("want %d integers (reply %v)", n, reply)
	}
	return fields, nil
}

// parseReply turns a decision script's reply {allowed, remaining,
// retry_after µs, reset_after µs, at µs} into a Result, checking its shape
// and that the fields agree with each other, since a wrong reply must never
// read as "allowed". notBefore is the earliest time the decision may have been
// made at (the caller's now in client-time mode, else 0).
func parseReply(reply any, limit, notBefore int64) (algorithms.Result, error) {
	fields, ok := reply.([]any)
	if !ok {
		return algorithms.Result{}, fmt.Errorf("want an array of 5 integers (reply %v)", reply)
	}
	return parseFields(fields, limit, notBefore)
}

// parseFields is parseReply for a reply already known to be an array, such
// as one decision's five fields in a batch's reply.
func parseFields(fields []any, limit, notBefore int64) (algorithms.Result, error) {
	bad := func(format string, args ...any) (algorithms.Result, error) {
		return algorithms.Result{}, fmt.Errorf("%s (reply %v)", fmt.Sprintf(format, args...), fields)
	}
	if len(fields) != 5 {
		return bad("want an array of 5 integers")
	}
	var v [5]int64
	for i, f := range fields {
		n, ok := f.(int64)
		if !ok {
			return bad("field %d is %T, want an integer", i+1, f)
		}
		v[i] = n
	}
	allowed, remaining, retry, reset, at := v[0], v[1], v[2], v[3], v[4]
	switch {
	case allowed != 0 && allowed != 1:
		return bad("allowed is %d", allowed)
	case remaining < 0 || remaining > limit:
		return bad("remaining %d outside [0, %d]", remaining, limit)
	case (allowed == 1) != (retry == 0) || retry < 0:
		return bad("allowed %d with retry_after %d", allowed, retry)
	case reset < 0:
		return bad("reset_after %d", reset)
	case at < notBefore || at < 0:
		return bad("decided at %d, before %d", at, max(notBefore, 0))
	}
	return algorithms.Result{
		Allowed:    allowed == 1,
		Limit:      limit,
		Remaining:  remaining,
		RetryAfter: time.Duration(retry) * time.Microsecond,
		ResetAfter: time.Duration(reset) * time.Microsecond,
		At:         time.UnixMicro(at),
	}, nil
}

// chargeOf reads what the reply of a request with a once key says of the
// admission it reports (see internal/scripts/once.lua), the first one if the request
// was applied before: tail is the reply's end after the limit its Result
// reports, the parameters it was decided under (the limit or rate count,
// then the burst or the sub-windows, or 0), then its cost. alg is the
// request's algorithm, of the same kind and scope. It returns res marked as
// what that admission charged (algo.Charge).
func chargeOf(res algorithms.Result, alg algorithms.Algorithm, tail []any) (algorithms.Result, error) {
	bad := func(what string) (algorithms.Result, error) {
		return algorithms.Result{}, fmt.Errorf("%s (reply ends %v)", what, tail)
	}
	if len(tail) != 3 {
		return bad("want the charge's limit, parameter and cost")
	}
	var v [3]int64
	for i, f := range tail {
		n, ok := f.(int64)
		if !ok || n < 0 {
			return bad(fmt.Sprintf("field %d is %v", i+1, f))
		}
		v[i] = n
	}
	if !res.Allowed || v[2] == 0 {
		return res, nil // charged nothing
	}
	p := algo.ParamsOf(alg)
	charged := alg
	if p.Limit != v[0] || algo.TakesBurst(alg.Kind()) && p.Burst != v[1] {
		// Decided under other parameters of the same kind and scope: a
		// retry after the key's limit changed.
		p.Limit = v[0]
		if algo.TakesBurst(alg.Kind()) {
			p.Burst = v[1]
		}
		var err error
		if charged, err = alg.Kind().New(p); err != nil {
			return bad(err.Error())
		}
	}
	return algo.Charge(res, charged, v[2]), nil
}

// limitOf reads the limit a reply of a request with a once key reports.
func limitOf(f any, reply any) (int64, error) {
	limit, ok := f.(int64)
	if !ok || limit < 1 {
		return 0, fmt.Errorf("limit %v (reply %v)", f, reply)
	}
	return limit, nil
}
