package algorithms

import (
	"fmt"
	"time"
)

// SlidingWindow is the sliding window counter: Window is split into
// SubWindows sub-windows of equal length, aligned to the Unix epoch, and the
// key keeps one counter per sub-window instead of one record per request.
//
// Semantics: at time t, the counters of the SubWindows most recent
// sub-windows, the current one included, are summed. A request of cost n is
// admitted when that sum plus n is at most Limit, and adds n to the current
// sub-window's counter. It behaves exactly like a SlidingLog whose timestamps
// are rounded down to the start of their sub-window: a request stops counting
// Window after the start of its sub-window, which is between Window-Window/
// SubWindows and Window after it was made.
//
// Accuracy: approximate, and only ever too lenient. At each decision the sum
// counts a subset of what an exact sliding log would count, so it never denies
// what the log would admit on the same history. Because requests expire up to
// one sub-window early, any span of length Window can hold at most Limit plus
// the cost admitted in a single sub-window. The worst case is 2×Limit: Limit
// admitted at the very end of a sub-window and Limit again Window-Window/
// SubWindows later, when that sub-window has dropped out. Under traffic spread
// evenly the excess is about Limit/SubWindows. More sub-windows shrink the
// typical error, not the adversarial one.
//
// Cost: one record per sub-window that admitted something, so at most
// SubWindows records per key (O(N) memory) whatever the rate. The key keeps a
// running total instead of summing its sub-windows, so a decision takes
// O(log N) time, not O(N): a window split into 10,000 sub-windows decides as
// fast as one split into 10.
//
// Changing Limit keeps the sub-window counts: lowered below their sum, the
// key is denied until enough sub-windows drop out. A now earlier than the
// latest time the key was decided at is decided at that latest time (see
// "Time that runs backwards" in the package doc).
type SlidingWindow struct {
	Limit      int64
	Window     time.Duration
	SubWindows int64
}

// Kind returns the registry's "sliding_window".
func (SlidingWindow) Kind() *Kind { return slidingWindowKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a SlidingWindow) packed() packedParams { return pack(a.params()) }

func (a SlidingWindow) params() Params {
	return Params{Limit: a.Limit, Window: a.Window, SubWindows: a.SubWindows}
}

// String describes the algorithm, such as "sliding_window 100/1m in 6 sub-windows".
func (a SlidingWindow) String() string { return describe(a) }

func (SlidingWindow) sealed() {}

// Validate checks Limit in [1, 2^50], Window a whole number of microseconds
// in [1µs, 2^50µs], SubWindows >= 1, and that Window splits evenly into
// SubWindows sub-windows of at least 1ms.
func (a SlidingWindow) Validate() error {
	if err := (FixedWindow{Limit: a.Limit, Window: a.Window}).Validate(); err != nil {
		return err
	}
	if a.SubWindows < 1 {
		return fmt.Errorf(
			"%w: sub-windows must be >= 1, got %d",
			ErrInvalidAlgorithm,
			a.SubWindows,
		)
	}
	if a.Window%time.Duration(a.SubWindows) != 0 || a.Window/time.Duration(a.SubWindows) < time.Millisecond ||
		(a.Window/time.Duration(a.SubWindows))%time.Microsecond != 0 {
		return fmt.Errorf(
			"%w: window %v does not split evenly into %d sub-windows of at least 1ms",
			ErrInvalidAlgorithm,
			a.Window,
			a.SubWindows,
		)
	}
	return nil
}
