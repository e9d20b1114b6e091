package ratewise

import "errors"

// Errors for invalid input to this package's own calls; match with
// errors.Is. Invalid algorithm parameters, costs and times wrap the
// algorithms package's errors (algorithms.ErrInvalidLimit,
// algorithms.ErrInvalidCost, algorithms.ErrCostExceedsLimit,
// algorithms.ErrInvalidTime, ...), and a store's failures the store
// package's (store.ErrUnavailable, store.ErrUnsupported,
// store.ErrMaybeDecided, store.ErrInvalidRequestID).
var (
	// ErrNilStore: New was given a nil store.
	ErrNilStore = errors.New("ratewise: store must not be nil")
	// ErrNilAlgorithm: New was given a nil algorithm.
	ErrNilAlgorithm = errors.New("ratewise: algorithm must not be nil")
	// ErrInvalidNamespace: WithNamespace was given a namespace containing
	// ":".
	ErrInvalidNamespace = errors.New(`ratewise: a namespace must not contain ":"`)
	// ErrEmptyKey: a key is empty.
	ErrEmptyKey = errors.New("ratewise: key must not be empty")
	// ErrInvalidMultiKey: NewMultiKey was given no limiters or a nil one, or
	// MultiKey.AllowN a number of keys other than the number of limiters.
	ErrInvalidMultiKey = errors.New("ratewise: invalid multi-key limiter")
	// ErrNotAdmitted: Refund was given a Result that charged nothing to
	// give back: a denial, a Peek's, or one not made by a decision.
	ErrNotAdmitted = errors.New("ratewise: the result to refund was not an admission")
)
