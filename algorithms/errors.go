package algorithms

import (
	"errors"
	"fmt"
	"time"
)

// Errors returned by Validate. Each returned error wraps exactly one of them
// and adds the offending value, so callers match with errors.Is.
var (
	// ErrInvalidLimit: a limit, capacity or rate count is not > 0.
	ErrInvalidLimit = errors.New("ratewise: limit must be > 0")
	// ErrInvalidWindow: a window is not a positive whole number of microseconds.
	ErrInvalidWindow = errors.New("ratewise: window must be a positive whole number of microseconds")
	// ErrInvalidPeriod: a rate's period is not a positive whole number of microseconds.
	ErrInvalidPeriod = errors.New("ratewise: period must be a positive whole number of microseconds")
	// ErrInvalidBurst: a burst is < 1.
	ErrInvalidBurst = errors.New("ratewise: burst must be >= 1")
	// ErrInvalidSubWindows: the number of sub-windows is < 1, or the window
	// does not split evenly into sub-windows of at least 1ms.
	ErrInvalidSubWindows = errors.New("ratewise: window must split evenly into sub-windows of at least 1ms")
	// ErrOutOfRange: the parameters are too large to compute exactly in
	// every store (a product above 2^53).
	ErrOutOfRange = errors.New("ratewise: parameters too large to compute exactly")
)

// maxExact is 2^53, the largest integer every store (Lua's doubles included)
// represents exactly.
const maxExact = 1 << 53

// durationMicros converts d to whole microseconds, rejecting zero, negative
// and fractional values with sentinel.
func durationMicros(sentinel error, what string, d time.Duration) (int64, error) {
	if d <= 0 || d%time.Microsecond != 0 {
		return 0, fmt.Errorf("%w, got %s %v", sentinel, what, d)
	}
	return int64(d / time.Microsecond), nil
}

// checkProduct rejects a*b > 2^53 without overflowing.
func checkProduct(what string, a, b int64) error {
	if a > maxExact/b {
		return fmt.Errorf("%w: %s is %d × %d, above 2^53", ErrOutOfRange, what, a, b)
	}
	return nil
}
