// Package store defines the interface every ratewise store implements, and
// the contract it must keep.
//
// A store decides where per-key state lives and how one decision is made
// atomic; the algorithm (package algorithms) decides what the decision is.
// The stores of this module run the algorithms' steps through an internal
// package, each in its own language (Go, Lua), held to one another by
// differential tests; a new store is written here, beside them (see
// docs/architecture.md). Outside the module, a type that wraps one of them,
// passing its calls on, is a store too. The shared conformance suite in
// contract_test checks every rule below:
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

// Key is what a limiter asks a store about: a key within a namespace.
type Key struct {
	// Namespace keeps apart the limiters that share a store
	// (ratewise.WithNamespace), or is "" for none.
	Namespace string

	// Name is the caller's key, such as "user:1001" or an IP address.
	Name string
}

// String returns the key as one string: Namespace + ":" + Name, or Name
// alone when Namespace is "". A store keeps one state per String (and
// algorithm and scope), however it splits or joins the parts.
func (k Key) String() string {
	if k.Namespace == "" {
		return k.Name
	}
	return k.Namespace + ":" + k.Name
}

// Store holds rate-limiting state and runs decisions on it.
//
// Contract:
//
//   - Decide is atomic per (algorithm, scope, key): concurrent calls behave
//     as if run one after another, each seeing the state the previous one
//     left, across every process that shares the store.
//   - State is kept per algorithm kind, scope (the window or period) and
//     key (Key.String): Decide and Reset never see another algorithm's or
//     another scope's state under the same key, nor another key's. Algorithm
//     values that differ only in limit, burst, capacity or rate count share
//     state, so a changed limit keeps what a key used. Keys are arbitrary
//     non-empty byte strings, of any length: what a store keeps for one is
//     bounded whatever its length (a long key under a digest that no
//     other key can spell), and two keys never share a state, a request
//     ID's record or a lease's mark.
//   - Decide returns exactly the Result that alg's decision step
//     returns on the stored state, now and cost, At
//     included. A store that reads its own
//     clock instead of now (such as a Redis server's) documents it and
//     offers a mode that uses now, which the conformance suite uses.
//   - A cost of 0 inspects without consuming: what is available is unchanged.
//     A cost of -n inspects the same way, for a request of cost n
//     (see Limiter.PeekN).
//   - State counts for Result.ResetAfter after the decision that wrote it,
//     and is kept at least that long, and at least until the decision's
//     At (a state that counts nothing may still hold a later time than the
//     decision's now, which a request whose clock reading lags is decided
//     at; a fixed window's, its window), and until the time
//     the step gives for it if that is later (a bucket
//     whose rate count changed lately, which refunds must still see), and
//     no longer than that plus a grace the store documents, so that a
//     request whose clock reading lags (read before the store ordered it)
//     still finds it; an inspection never drops it. Idle keys vanish on
//     their own, so memory stays bounded under key churn.
//   - Being limited is Result.Allowed == false, never an error. An error
//     means the decision did not happen or its outcome is unknown: the caller
//     must not treat it as allowed.
//   - Errors come in classes. Invalid input (a value that is not one of
//     package algorithms' types, an algorithm that fails Validate, a cost
//     outside what an idle key admits at once in either sign, a time the
//     store uses outside [the Unix epoch, 2^52µs after it, in 2112]) is the error
//     wraps one of the algorithms package's errors, the same on every store; Reset rejects the same algorithms. An
//     algorithm the store cannot run wraps ErrUnsupported, and may wrap the
//     invalid-input error too. A context error is returned
//     (possibly wrapped) only when the caller's ctx has ended. Every other
//     failure, timeouts of the store's own included, wraps ErrUnavailable.
//   - Stores are safe for concurrent use and never panic on any input.
type Store interface {
	// Decide runs one decision step of alg for key at time now with the
	// given cost (0 to inspect) and returns its result. The zero now, here
	// and in every method below, asks for the current time: a store that
	// decides at the now it is given reads the system clock, once, and one
	// on its own clock reads that clock as it always does.
	Decide(ctx context.Context, key Key, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error)

	// DecideSet runs one decision of cost for key under every algorithm of
	// algs at once, atomically with every other decision on those states:
	//
	//   - If every algorithm admits the request, each is charged, and each
	//     Result is what Decide would return.
	//   - If any denies, none is charged: each denying algorithm's Result,
	//     and the state it leaves, are what Decide would give for that
	//     denial, and each admitting algorithm's Result is an inspection at
	//     now (what Decide with cost 0 returns), whose Allowed is true.
	//   - A cost of 0, or -n, inspects every algorithm (for a request of
	//     cost 1, or n) and changes nothing.
	//
	// Results come in the order of algs. Two algorithms of one kind and
	// scope would share one state, so they are invalid input
	// (algorithms.ErrInvalidAlgorithm);
	// every other input is checked as Decide checks it. ratewise.NewStack
	// decides through it.
	DecideSet(
		ctx context.Context,
		key Key,
		algs []algorithms.Algorithm,
		now time.Time,
		cost int64,
	) ([]algorithms.Result, error)

	// Reserve runs alg's booking step on key's state, for the algorithms
	// that can book a request ahead (the token bucket and GCRA),
	// atomically, as Decide decides: it returns the Result, and the wait
	// until the booked request's turn. An algorithm that cannot book wraps
	// ErrUnsupported; a maxWait outside [0, 2^50µs], or not a
	// whole number of microseconds, wraps algorithms.ErrInvalidTime. Limiter.Wait uses it to wait in one
	// round trip and in order.
	Reserve(
		ctx context.Context,
		key Key,
		alg algorithms.Algorithm,
		now time.Time,
		cost int64,
		maxWait time.Duration,
	) (algorithms.Result, time.Duration, error)

	// Refund runs alg's refund step on key's state for n units charged at
	// time at (the admission's Result.At), at time now, atomically, as
	// Decide decides, and returns what Decide with a cost of 0 then
	// returns, writing nothing more (not even a rate count that inspection
	// would convert). The state is then kept as a decision's is, for that
	// Result's ResetAfter and at least until its At, or the time the step
	// gives (plus the store's grace). Invalid input (n outside [1, the cost
	// an idle key admits], a time outside [the Unix epoch,
	// 2^52µs after it, in 2112]) wraps the algorithms
	// package's errors; a store on its own clock checks at, and now only
	// where it uses the caller's. Limiter.Refund uses it.
	Refund(ctx context.Context, key Key, alg algorithms.Algorithm, now, at time.Time, n int64) (algorithms.Result, error)

	// Lease books cost units (at least 1) of a lease for key under alg at
	// now, for package lease, which spends them one at a time away from
	// the store: as Reserve books them, waiting at most maxWait, for the
	// token bucket and GCRA, and as Decide charges them for the fixed
	// window, which ignores maxWait. It returns what Reserve or Decide
	// would, and takes request IDs as they do; any other algorithm wraps
	// ErrUnsupported.
	//
	// A lease's units are charged when it is booked and spent later, so a
	// Reset that forgot them would let them through beside a fresh limit.
	// When Lease admits, the state it leaves becomes key's mark under alg,
	// kept as long as that state is, and Reset puts the mark back in place
	// of alg's state instead of forgetting it, while the store still keeps
	// the mark: what leases booked stays charged, and what was charged
	// after the latest one is forgotten. The mark is that state as the
	// booking left it: what was given back since (Refund) is charged again.
	Lease(
		ctx context.Context,
		key Key,
		alg algorithms.Algorithm,
		now time.Time,
		cost int64,
		maxWait time.Duration,
	) (algorithms.Result, time.Duration, error)

	// Reset forgets alg's state for key, in alg's scope; a store that
	// keeps a lease's mark for the key puts the mark back instead (see
	// Lease). Resetting a key with no state is not an error.
	Reset(ctx context.Context, key Key, alg algorithms.Algorithm) error

	// Capabilities says what the store is, for the layers above it (package
	// lease reads it). A store that wraps another returns its inner
	// store's, unless the wrapper changes what they say.
	Capabilities() Capabilities
}

// Capabilities is what a store declares about how it decides.
type Capabilities struct {
	// OwnClock is true for a store that decides on a clock of its own,
	// such as a Redis or PostgreSQL server's, and false for one that
	// decides at the now it is given (the memory store; the Redis and
	// PostgreSQL stores WithClientTime). Leases need the caller's now.
	OwnClock bool

	// RequestIDs is true for a store that applies a request carrying a
	// request ID (ratewise.WithRequestID) at most once, and rejects an
	// empty ID or one of more than 128 bytes with
	// ErrInvalidRequestID. A store without it ignores request IDs.
	RequestIDs bool
}

// ErrUnavailable is wrapped by every store failure other than invalid input,
// an unsupported algorithm and the caller's own context ending: the store
// could not be reached, timed out on its side, or answered something that is
// not a valid decision.
var ErrUnavailable = errors.New("ratewise: store unavailable")

// ErrUnsupported is wrapped when a store cannot run an algorithm at all, such
// as the Redis store given an algorithm it has no script for. It is a
// programming error, not an outage: retrying will not help.
var ErrUnsupported = errors.New("ratewise: algorithm not supported by this store")
