package algorithms

import (
	"fmt"
	"time"
)

// FixedWindow is the fixed window counter: time is cut into windows of length
// Window aligned to multiples of Window since the Unix epoch, and each window
// admits at most Limit cost. It is Redis's INCR + EXPIRE pattern.
//
// Semantics: a request of cost n at time t is admitted when the cost already
// admitted in t's window plus n is at most Limit. The count starts from zero
// at every window boundary.
//
// Accuracy: exact per window, but windows do not slide. Up to 2×Limit can be
// admitted within a span much shorter than Window: Limit just before a
// boundary and Limit just after it. With 100 per minute, 100 requests at
// 13:59:59 and 100 at 14:00:00 are all admitted.
//
// Cost: one counter and its window start per key (O(1) memory); O(1) work per
// decision.
//
// Changing Limit keeps the count of the current window: lowered below it,
// the key is denied until the window ends. A now in an earlier window than
// the key's (a clock that stepped back) is counted in the key's window, so
// nothing extra gets through; Result.At is then that window's start.
type FixedWindow struct {
	Limit  int64
	Window time.Duration
}

// Kind returns the registry's "fixed_window".
func (FixedWindow) Kind() *Kind { return fixedWindowKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a FixedWindow) packed() packedParams { return pack(a.params()) }

func (a FixedWindow) params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// String describes the algorithm, such as "fixed_window 100/1m".
func (a FixedWindow) String() string { return describe(a) }

func (FixedWindow) sealed() {}

// Validate checks Limit in [1, 2^50] and Window a whole number of
// microseconds in [1µs, 2^50µs].
func (a FixedWindow) Validate() error {
	if a.Limit <= 0 {
		return fmt.Errorf("%w: limit must be > 0, got %d", ErrInvalidAlgorithm, a.Limit)
	}
	if err := checkCount("limit", a.Limit); err != nil {
		return err
	}
	_, err := durationMicros("window", a.Window)
	return err
}
