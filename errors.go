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
	// ErrEmptyKey: a key is empty.
	ErrEmptyKey = errors.New("ratewise: key must not be empty")
	// ErrInvalidCost: AllowN was given n <= 0.
	ErrInvalidCost = errors.New("ratewise: cost must be > 0")
	// ErrCostExceedsLimit: AllowN was given an n larger than the limit, which
	// could never be admitted.
	ErrCostExceedsLimit = errors.New("ratewise: cost exceeds the limit")
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
// the store could not be reached or answered something that is not a valid
// decision. It is store.ErrUnavailable.
var ErrStoreUnavailable = store.ErrUnavailable
