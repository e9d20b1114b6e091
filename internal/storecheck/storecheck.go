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

// Set checks a set of algorithms for DecideSet: at least one, each
// valid for a decision at now with cost (algo.CheckDecision), no two
// sharing a kind and scope.
func Set(algs []algorithms.Algorithm, now time.Time, cost int64) error {
	if len(algs) == 0 {
		return fmt.Errorf("%w: a set needs at least one algorithm", algorithms.ErrUnknownAlgorithm)
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
			return fmt.Errorf("%w: %s and another %s with the same scope", store.ErrSharedState, alg, alg.Kind())
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
	if id == "" || len(id) > store.MaxRequestIDLen {
		return fmt.Errorf("%w: %d bytes, want 1 to %d", store.ErrInvalidRequestID, len(id), store.MaxRequestIDLen)
	}
	return nil
}
