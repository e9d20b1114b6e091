package storeredis

import (
	"errors"
	"fmt"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// errMalformedReply is wrapped, with store.ErrUnavailable, when a script's
// reply is not a valid decision.
var errMalformedReply = errors.New("storeredis: malformed script reply")

// A parser reads a script's reply into its op's outcome, or returns what is
// wrong with it: a plain error, which parse wraps.
type parser interface {
	parse(reply any) error
}

// parse is the parse step of every op, a decision in a batch's included:
// a reply p does not accept fails with store.ErrUnavailable and
// errMalformedReply, never reads as "allowed". It is the one place a reply
// becomes errMalformedReply.
func parse(p parser, reply any) error {
	if err := p.parse(reply); err != nil {
		return fmt.Errorf("%w: %w: %w", store.ErrUnavailable, errMalformedReply, err)
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
	if len(fields) != 5 {
		return algorithms.Result{}, fmt.Errorf("want an array of 5 integers (reply %v)", fields)
	}
	var v [5]int64
	for i, f := range fields {
		n, ok := f.(int64)
		if !ok {
			return algorithms.Result{}, fmt.Errorf("field %d is %T, want an integer (reply %v)", i+1, f, fields)
		}
		v[i] = n
	}
	res, err := storecheck.Result(v, limit, notBefore)
	if err != nil {
		return algorithms.Result{}, fmt.Errorf("%w (reply %v)", err, fields)
	}
	return res, nil
}

// chargeOf reads what the reply of a request with a once key says of the
// admission it reports (see internal/scripts/once.lua), the first one if the request
// was applied before: tail is the reply's end after the limit its Result
// reports, the parameters it was decided under (the limit or rate count,
// then the burst or the sub-windows, or 0), then its cost. alg is the
// request's algorithm, of the same kind and scope. It returns res marked as
// what that admission charged (Result.SetCharged).
func chargeOf(res algorithms.Result, alg algorithms.Algorithm, tail []any) (algorithms.Result, error) {
	if len(tail) != 3 {
		return algorithms.Result{}, fmt.Errorf("want the charge's limit, parameter and cost (reply ends %v)", tail)
	}
	var v [3]int64
	for i, f := range tail {
		n, ok := f.(int64)
		if !ok {
			return algorithms.Result{}, fmt.Errorf("field %d is %v (reply ends %v)", i+1, f, tail)
		}
		v[i] = n
	}
	res, err := storecheck.Charged(res, alg, v[0], v[1], v[2])
	if err != nil {
		return algorithms.Result{}, fmt.Errorf("%w (reply ends %v)", err, tail)
	}
	return res, nil
}

// limitOf reads the limit a reply of a request with a once key reports.
func limitOf(f any, reply any) (int64, error) {
	limit, ok := f.(int64)
	if !ok || limit < 1 {
		return 0, fmt.Errorf("limit %v (reply %v)", f, reply)
	}
	return limit, nil
}
