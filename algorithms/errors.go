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
	// every store: a count or a duration in µs above 2^50, or a capacity or
	// burst times a period in µs above 2^51.
	ErrOutOfRange = errors.New("ratewise: parameters too large to compute exactly")
)

// Bounds that keep every intermediate value of every algorithm below 2^53,
// the largest integer a Lua number (a double) holds exactly, so that the
// Redis scripts compute exactly what Go computes. The worst case is GCRA's
// d + n×T: below 2×maxProduct + 2×maxCount.
const (
	maxCount   = 1 << 50 // counts, and durations in µs (35 years)
	maxProduct = 1 << 51 // capacity or burst × period in µs
)

// checkCount rejects a count above maxCount.
func checkCount(what string, n int64) error {
	if n > maxCount {
		return fmt.Errorf("%w: %s %d is above 2^50", ErrOutOfRange, what, n)
	}
	return nil
}

// durationMicros converts d to whole microseconds, rejecting zero, negative
// and fractional values with sentinel and values above maxCount µs with
// ErrOutOfRange.
func durationMicros(sentinel error, what string, d time.Duration) (int64, error) {
	if d <= 0 || d%time.Microsecond != 0 {
		return 0, fmt.Errorf("%w, got %s %v", sentinel, what, d)
	}
	us := int64(d / time.Microsecond)
	return us, checkCount(what+" in µs", us)
}

// checkProduct rejects a*b > maxProduct without overflowing.
func checkProduct(what string, a, b int64) error {
	if a > maxProduct/b {
		return fmt.Errorf("%w: %s is %d × %d, above 2^51", ErrOutOfRange, what, a, b)
	}
	return nil
}
