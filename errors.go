package ratewise

import (
	"errors"
	"fmt"

	"github.com/ratewise/ratewise/algorithms"
)

// Errors for invalid input to this package's own calls; match with
// errors.Is. Invalid algorithms (a nil one included), costs and times wrap
// the algorithms package's errors (algorithms.ErrInvalidAlgorithm,
// algorithms.ErrInvalidCost, algorithms.ErrCostExceedsLimit,
// algorithms.ErrInvalidTime), and a store's failures the store package's
// (store.ErrUnavailable, store.ErrUnsupported, store.ErrMaybeDecided,
// store.ErrInvalidRequestID).
var (
	// ErrInvalidConfig: a limiter cannot be built or used as configured:
	// New or NewStack was given a nil store, or NewStack no algorithms;
	// WithNamespace a namespace containing ":"; NewMultiKey no limiters or
	// a nil one; or MultiKey.AllowN a number of keys other than the number
	// of its limiters. The message says which.
	ErrInvalidConfig = errors.New("ratewise: invalid configuration")
	// ErrEmptyKey: a key is empty.
	ErrEmptyKey = errors.New("ratewise: key must not be empty")
	// ErrNotAdmitted: Refund was given a Result that charged nothing to
	// give back: a denial, a PeekN's, or one not made by a decision.
	ErrNotAdmitted = errors.New("ratewise: the result to refund was not an admission")
)

// errNilAlgorithm is the error for a nil algorithm given to New, NewStack
// or AllowWith.
var errNilAlgorithm = fmt.Errorf("%w: the algorithm is nil", algorithms.ErrInvalidAlgorithm)
