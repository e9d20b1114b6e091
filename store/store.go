// Package store defines the interface every ratewise store implements, and
// the contract it must keep.
//
// A store decides where per-key state lives and how one decision is made
// atomic; the algorithm (package algorithms) decides what the decision is.
// The shared conformance suite in contract_test checks every rule below:
//
//	import contract "github.com/ratewise/ratewise/contract_test"
//
//	func TestContract(t *testing.T) {
//		contract.Run(t, func(t *testing.T) store.Store { return mystore.New() })
//	}
package store

import (
	"context"
	"errors"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// Store holds rate-limiting state and runs decisions on it.
//
// Contract:
//
//   - Decide is atomic per (algorithm name, key): concurrent calls behave as
//     if run one after another, each seeing the state the previous one left,
//     across every process that shares the store.
//   - State is kept per algorithm name and key: Decide and Reset for one
//     algorithm never see another algorithm's state under the same key, nor
//     another key's. Keys are arbitrary non-empty byte strings.
//   - Decide returns exactly the Result that alg.Decide returns on the
//     stored state, now and cost. A store that reads its own clock instead of
//     now (such as a Redis server's) documents it and offers a mode that uses
//     now, which the conformance suite uses.
//   - A cost of 0 inspects without consuming: what is available is unchanged.
//   - State is kept no longer than Result.ResetAfter after the decision that
//     wrote it, since it cannot affect any later decision. Idle keys vanish on
//     their own, so memory stays bounded under key churn.
//   - Being limited is Result.Allowed == false, never an error. An error
//     means the decision did not happen or its outcome is unknown: the caller
//     must not treat it as allowed. A cancelled or expired ctx yields
//     ctx.Err() (possibly wrapped); any other failure wraps ErrUnavailable.
//   - Stores are safe for concurrent use and never panic on any input the
//     limiter passes.
type Store interface {
	// Decide runs one decision step of alg for key at time now with the
	// given cost (0 to inspect) and returns its result.
	Decide(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error)

	// Reset forgets alg's state for key. Resetting a key with no state is
	// not an error.
	Reset(ctx context.Context, key string, alg algorithms.Algorithm) error
}

// ErrUnavailable is wrapped by every store error other than a context error:
// the store could not be reached, timed out on its side, or answered
// something that is not a valid decision.
var ErrUnavailable = errors.New("ratewise: store unavailable")

// Inspector is an optional capability: a store that can report how long it
// will keep a key's state. The conformance suite probes for it to check that
// state expires on time.
type Inspector interface {
	// TTL returns how long after now the store keeps alg's state for key, or
	// 0 if it holds none. A store whose expiry runs on its own clock may
	// ignore now and round up to its clock's resolution.
	TTL(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time) (time.Duration, error)
}
