package algorithms

import (
	"errors"
	"fmt"
	"time"
)

// Errors for invalid algorithms, returned by Validate, Kind.New, Lookup and
// ParseRate, and for invalid decisions, which every store checks before it
// decides. Each returned error wraps exactly one of them and adds the
// offending value, so callers match with errors.Is and show the message.
var (
	// ErrInvalidAlgorithm: an algorithm cannot be used as it is: a nil
	// algorithm, an unknown name, rate text that does not parse, a
	// parameter out of its range (a limit, capacity, burst or rate count
	// below 1; a window or period that is not a positive whole number of
	// microseconds; sub-windows that do not split the window evenly into
	// at least 1ms each), a parameter the algorithm does not take, or one
	// outside the range every store computes exactly (a count above
	// 2^50, a duration above 2^50µs, or a bucket that takes longer than
	// 2^50µs to refill). The message names the parameter and its
	// value, such as "ratewise: invalid algorithm: burst must be >= 1, got 0".
	ErrInvalidAlgorithm = errors.New("ratewise: invalid algorithm")
	// ErrInvalidCost: a request's or a refund's cost is not > 0.
	ErrInvalidCost = errors.New("ratewise: invalid cost")
	// ErrCostExceedsLimit: a cost is larger than the limit, capacity or
	// burst, so it could never be admitted.
	ErrCostExceedsLimit = errors.New("ratewise: cost exceeds the limit")
	// ErrInvalidTime: a decision time is before the Unix epoch or more
	// than 2^52µs after it (in 2112), or the longest wait for a booking
	// (Reserve's maxWait) is negative, above 2^50µs or not a whole number
	// of microseconds.
	ErrInvalidTime = errors.New("ratewise: time outside the supported range")
)

// The exactness envelope. Every value an algorithm computes stays below
// 2^53, the largest integer a Lua number (a double) holds exactly, so the
// Redis scripts compute exactly what Go computes:
//
//   - counts (limits, capacities, bursts, rate counts) up to 2^50, about
//     1.1×10^15: 10^9 per second over 13 days;
//   - durations up to 2^50µs, about 35 years;
//   - times from the Unix epoch up to 2^52µs after it (in
//     2112), so that a time plus any duration stays below 2^53µs.
//
// Products that can pass 2^53, such as a burst times a period, are never
// formed as one number: see mulDiv.
const (
	// maxLimit is the largest limit, capacity, burst or rate count an
	// algorithm takes: 2^50, about 1.1×10^15 (a CompactLog takes at most
	// 2^20).
	maxLimit = 1 << 50

	// maxWindow is the longest window, rate period, refill time or wait
	// for a booking: 2^50µs, about 35.7 years.
	maxWindow = maxLimit * time.Microsecond

	// maxUnixMicro is the latest decision time every store supports, in
	// microseconds since the Unix epoch: 2^52 - 1, in September 2112. Use
	// time.UnixMicro(maxUnixMicro) for the time itself.
	maxUnixMicro = 1<<52 - 1
)

// maxDuration is maxWindow in microseconds.
const maxDuration = int64(maxWindow / time.Microsecond)

// checkCount rejects a count above maxLimit.
func checkCount(what string, n int64) error {
	if n > maxLimit {
		return fmt.Errorf("%w: %s %d is above 2^50", ErrInvalidAlgorithm, what, n)
	}
	return nil
}

// durationMicros converts d to whole microseconds, rejecting zero, negative
// and fractional values and values above maxDuration.
func durationMicros(what string, d time.Duration) (int64, error) {
	if d <= 0 || d%time.Microsecond != 0 {
		return 0, fmt.Errorf("%w: %s must be a positive whole number of microseconds, got %v", ErrInvalidAlgorithm, what, d)
	}
	us := int64(d / time.Microsecond)
	if us > maxDuration {
		return 0, fmt.Errorf("%w: %s %v is above 2^50µs", ErrInvalidAlgorithm, what, d)
	}
	return us, nil
}
