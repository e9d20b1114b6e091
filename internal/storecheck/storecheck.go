// Package storecheck holds the checks every ratewise store makes of its
// input before it decides, so that every store rejects the same input with
// the same errors.
package storecheck

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/store"
)

// ExpiryGrace is how much longer than its ResetAfter a store keeps a key's
// state where state expires on a clock other than the one decisions read:
// the memory store's own clock, and the server's in client-time mode on
// Redis and PostgreSQL. A decision whose clock reading reaches the state
// late (concurrent callers read their clocks before the store orders them)
// still finds it.
const ExpiryGrace = time.Second

// Reserve checks a reservation as Decide's inputs are checked, with a
// cost of at least 1 (a booking is a request, never an inspection), and
// that alg can book (the token bucket and GCRA).
func Reserve(alg algorithms.Algorithm, now time.Time, cost int64, maxWait time.Duration) error {
	if cost <= 0 {
		return fmt.Errorf("%w: a booking's cost must be > 0, got %d", algorithms.ErrInvalidCost, cost)
	}
	if err := algo.CheckDecision(alg, now, cost); err != nil {
		return err
	}
	if !algo.Reserves(alg) {
		return fmt.Errorf("%w: %s cannot book requests ahead", store.ErrUnsupported, alg.Kind())
	}
	return algo.CheckMaxWait(maxWait)
}

// Lease checks a lease's booking (store.Store.Lease): as Reserve checks it for
// the algorithms that book, and as a decision of a cost of at least 1 for
// the fixed window, whose maxWait is not used.
func Lease(alg algorithms.Algorithm, now time.Time, cost int64, maxWait time.Duration) error {
	if algo.CheckKind(alg) == nil && algo.FamilyOf(alg.Kind()) == algo.FamilyFixedWindow {
		if cost <= 0 {
			return fmt.Errorf("%w: a lease's cost must be > 0, got %d", algorithms.ErrInvalidCost, cost)
		}
		return algo.CheckDecision(alg, now, cost)
	}
	return Reserve(alg, now, cost, maxWait)
}

// Set checks a set of algorithms for DecideSet: at least one, each
// valid for a decision at now with cost (algo.CheckDecision), no two
// sharing a kind and scope.
func Set(algs []algorithms.Algorithm, now time.Time, cost int64) error {
	if len(algs) == 0 {
		return fmt.Errorf("%w: a set needs at least one algorithm", algorithms.ErrInvalidAlgorithm)
	}
	type id struct {
		kind  *algorithms.Kind
		scope algo.Scope
	}
	seen := make(map[id]bool, len(algs))
	for _, alg := range algs {
		if err := algo.CheckDecision(alg, now, cost); err != nil {
			return err
		}
		k := id{alg.Kind(), algo.ScopeOf(alg)}
		if seen[k] {
			return fmt.Errorf(
				"%w: two limits of a stack share one state: %s and another %s with the same scope",
				algorithms.ErrInvalidAlgorithm,
				alg,
				alg.Kind(),
			)
		}
		seen[k] = true
	}
	return nil
}

// RequestID returns nil if ctx carries no request ID or a valid one,
// and an error wrapping store.ErrInvalidRequestID otherwise.
func RequestID(ctx context.Context) error {
	id, ok := requestid.From(ctx)
	if !ok {
		return nil
	}
	if id == "" || len(id) > requestid.MaxLen {
		return fmt.Errorf("%w: %d bytes, want 1 to %d", store.ErrInvalidRequestID, len(id), requestid.MaxLen)
	}
	return nil
}

// Result checks the five fields of a result a store read back from its own
// language (a Lua script, a SQL function): allowed (1 or 0), remaining
// under limit, retry_after and reset_after in µs, and at, the time decided
// at in µs since the Unix epoch, no earlier than notBefore. It returns them
// as a Result, or an error that says which field is out of range: a state
// no decision wrote, or code of another version, must never read as an
// admission.
func Result(fields [5]int64, limit, notBefore int64) (algorithms.Result, error) {
	allowed, remaining, retry, reset, at := fields[0], fields[1], fields[2], fields[3], fields[4]
	switch {
	case limit < 1:
		return algorithms.Result{}, fmt.Errorf("limit %d", limit)
	case allowed != 0 && allowed != 1:
		return algorithms.Result{}, fmt.Errorf("allowed is %d", allowed)
	case remaining < 0 || remaining > limit:
		return algorithms.Result{}, fmt.Errorf("remaining %d outside [0, %d]", remaining, limit)
	case (allowed == 1) != (retry == 0) || retry < 0:
		return algorithms.Result{}, fmt.Errorf("allowed %d with retry_after %d", allowed, retry)
	case reset < 0:
		return algorithms.Result{}, fmt.Errorf("reset_after %d", reset)
	case at < notBefore || at < 0:
		return algorithms.Result{}, fmt.Errorf("decided at %d, before %d", at, max(notBefore, 0))
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

// Charged returns res, read back from a store's record of a request made
// with a request ID, marked as what the admission it reports charged
// (algorithms.Result.SetCharged): cost, under the limit (or rate count) and burst recorded,
// of alg's kind and scope. A retry made after the key's limit changed gets
// the limit the admission was charged under. A denial, or a record of cost
// 0, charged nothing.
func Charged(res algorithms.Result, alg algorithms.Algorithm, limit, burst, cost int64) (algorithms.Result, error) {
	if limit < 0 || burst < 0 || cost < 0 {
		return algorithms.Result{}, fmt.Errorf("charge of %d under %d and %d", cost, limit, burst)
	}
	if !res.Allowed || cost == 0 {
		return res, nil
	}
	p := algo.ParamsOf(alg)
	by := alg
	if p.Limit != limit || algo.TakesBurst(alg.Kind()) && p.Burst != burst {
		p.Limit = limit
		if algo.TakesBurst(alg.Kind()) {
			p.Burst = burst
		}
		var err error
		if by, err = alg.Kind().New(p); err != nil {
			return algorithms.Result{}, err
		}
	}
	res.SetCharged(by, cost)
	return res, nil
}

// MaybeDecided returns err, the error of a write that may have been applied
// (its request reached the server, and no reply came), wrapping
// store.ErrMaybeDecided too.
func MaybeDecided(err error) error { return &maybeDecided{err} }

type maybeDecided struct{ err error }

func (e *maybeDecided) Error() string {
	return e.err.Error() + " (the request may have been decided)"
}

func (e *maybeDecided) Unwrap() []error { return []error{e.err, store.ErrMaybeDecided} }

// Now is the now a store that decides at the caller's time decides at:
// now, or the system clock's time for the zero now (see store.Store).
func Now(now time.Time) time.Time {
	if now.IsZero() {
		return time.Now()
	}
	return now
}
