package algorithms

import (
	"errors"
	"fmt"
	"time"
)

// Errors for invalid parameters, returned by Validate, and for invalid
// decisions, which every store checks before it decides. Each returned error wraps exactly
// one of them and adds the offending value, so callers match with errors.Is.
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
	// ErrOutOfRange: a parameter is outside the range every store computes
	// exactly: a count above 2^50, a duration above 2^50µs, or a bucket
	// that takes longer than 2^50µs to refill. The message names the bound.
	ErrOutOfRange = errors.New("ratewise: parameters too large to compute exactly")
	// ErrInvalidCost: a request's or a refund's cost is not > 0.
	ErrInvalidCost = errors.New("ratewise: invalid cost")
	// ErrCostExceedsLimit: a cost is larger than the limit, capacity or
	// burst, so it could never be admitted.
	ErrCostExceedsLimit = errors.New("ratewise: cost exceeds the limit")
	// ErrInvalidTime: a decision time is before the Unix epoch or after
	// MaxUnixMicro.
	ErrInvalidTime = errors.New("ratewise: time outside the supported range")
)

// The exactness envelope. Every value an algorithm computes stays below
// 2^53, the largest integer a Lua number (a double) holds exactly, so the
// Redis scripts compute exactly what Go computes:
//
//   - counts (limits, capacities, bursts, rate counts) up to 2^50, about
//     1.1×10^15: 10^9 per second over 13 days;
//   - durations up to 2^50µs, about 35 years;
//   - times from the Unix epoch up to 2^52µs after it (MaxUnixMicro, in
//     2112), so that a time plus any duration stays below 2^53µs.
//
// Products that can pass 2^53, such as a burst times a period, are never
// formed as one number: see mulDiv.
const (
	// MaxLimit is the largest limit, capacity, burst or rate count an
	// algorithm takes: 2^50, about 1.1×10^15 (a CompactLog takes at most
	// CompactLogMaxLimit).
	MaxLimit = 1 << 50

	// MaxWindow is the longest window, rate period, refill time or wait
	// for a booking: 2^50µs, about 35.7 years.
	MaxWindow = MaxLimit * time.Microsecond

	// MaxUnixMicro is the latest decision time every store supports, in
	// microseconds since the Unix epoch: 2^52 - 1, in September 2112. Use
	// time.UnixMicro(MaxUnixMicro) for the time itself.
	MaxUnixMicro = 1<<52 - 1
)

// maxDuration is MaxWindow in microseconds.
const maxDuration = int64(MaxWindow / time.Microsecond)

// checkCount rejects a count above MaxLimit.
func checkCount(what string, n int64) error {
	if n > MaxLimit {
		return fmt.Errorf("%w: %s %d is above 2^50", ErrOutOfRange, what, n)
	}
	return nil
}

// durationMicros converts d to whole microseconds, rejecting zero, negative
// and fractional values with sentinel and values above maxDuration with
// ErrOutOfRange.
func durationMicros(sentinel error, what string, d time.Duration) (int64, error) {
	if d <= 0 || d%time.Microsecond != 0 {
		return 0, fmt.Errorf("%w, got %s %v", sentinel, what, d)
	}
	us := int64(d / time.Microsecond)
	if us > maxDuration {
		return 0, fmt.Errorf("%w: %s %v is above 2^50µs", ErrOutOfRange, what, d)
	}
	return us, nil
}
