package ratewise

import (
	"errors"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Errors for invalid input. Each error a Limiter returns for bad input wraps
// exactly one of them; match with errors.Is.
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
	// ErrInvalidCost: AllowN or PeekN was given n <= 0, or Refund an n
	// outside [1, the cost the admission was charged]. It is
	// algorithms.ErrInvalidCost.
	ErrInvalidCost = algorithms.ErrInvalidCost
	// ErrCostExceedsLimit: AllowN was given an n larger than the limit, which
	// could never be admitted. It is algorithms.ErrCostExceedsLimit.
	ErrCostExceedsLimit = algorithms.ErrCostExceedsLimit
	// ErrInvalidTime: the clock read a time before 1970 or after
	// algorithms.MaxTime (the zero time.Time, say), on a store that decides
	// with it. It is algorithms.ErrInvalidTime.
	ErrInvalidTime = algorithms.ErrInvalidTime
	// ErrInvalidGroup: NewGroup was given no limiters or a nil one, or
	// Group.AllowN a number of keys other than the number of limiters.
	ErrInvalidGroup = errors.New("ratewise: invalid group")
	// ErrNotAdmitted: Refund was given a Result that charged nothing to
	// give back: a denial, a Peek's, or one not made by a decision.
	ErrNotAdmitted = errors.New("ratewise: the result to refund was not an admission")
)

// Errors for invalid algorithm parameters, returned by New. They are the
// algorithms package's sentinels, so errors.Is matches either name.
var (
	ErrInvalidLimit      = algorithms.ErrInvalidLimit
	ErrInvalidWindow     = algorithms.ErrInvalidWindow
	ErrInvalidPeriod     = algorithms.ErrInvalidPeriod
	ErrInvalidBurst      = algorithms.ErrInvalidBurst
	ErrInvalidSubWindows = algorithms.ErrInvalidSubWindows
	ErrOutOfRange        = algorithms.ErrOutOfRange
)

// ErrStoreUnavailable is wrapped by store failures other than context errors:
// the store could not be reached, timed out, or answered something that is
// not a valid decision. It is store.ErrUnavailable.
var ErrStoreUnavailable = store.ErrUnavailable

// ErrUnsupported is returned by New when the store cannot run the algorithm.
// It is store.ErrUnsupported.
var ErrUnsupported = store.ErrUnsupported

// ErrUnknownAlgorithm is returned by New for an algorithm that is not one of
// package algorithms' types (see algorithms.CheckKind). It is
// algorithms.ErrUnknownAlgorithm.
var ErrUnknownAlgorithm = algorithms.ErrUnknownAlgorithm
