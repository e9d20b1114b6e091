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
// Args: [Limit, Window in µs].
type FixedWindow struct {
	Limit  int64
	Window time.Duration
}

// FixedWindowState is the count admitted in the window starting at Start
// (microseconds since the Unix epoch).
type FixedWindowState struct {
	Start int64
	Count int64
}

// Name returns "fixed_window".
func (FixedWindow) Name() string { return "fixed_window" }

// MaxCost returns Limit.
func (a FixedWindow) MaxCost() int64 { return a.Limit }

// Args returns [Limit, Window in µs].
func (a FixedWindow) Args() []int64 { return []int64{a.Limit, int64(a.Window / time.Microsecond)} }

// Validate checks Limit > 0 and Window a positive whole number of microseconds.
func (a FixedWindow) Validate() error {
	if a.Limit <= 0 {
		return fmt.Errorf("%w, got %d", ErrInvalidLimit, a.Limit)
	}
	if err := checkCount("limit", a.Limit); err != nil {
		return err
	}
	_, err := durationMicros(ErrInvalidWindow, "window", a.Window)
	return err
}

// Decide runs one fixed-window step; see Algorithm.Decide.
func (a FixedWindow) Decide(state State, now time.Time, cost int64) (State, Result) {
	w := int64(a.Window / time.Microsecond)
	t := micros(now)
	start := t - floorMod(t, w)
	var count int64
	st, _ := state.(*FixedWindowState)
	if st != nil {
		// A window later than now's means the clock stepped back: keep
		// counting in it, so nothing extra gets through.
		start = max(start, st.Start)
		if st.Start == start {
			count = st.Count
		}
	}
	res := Result{Limit: a.Limit}
	if count+max(cost, 1) <= a.Limit {
		res.Allowed = true
		if cost > 0 {
			count += cost
			if st == nil {
				st = &FixedWindowState{}
			}
			st.Start, st.Count = start, count
		}
	} else {
		res.RetryAfter = duration(start + w - t)
	}
	res.Remaining = a.Limit - count
	if count > 0 {
		res.ResetAfter = duration(start + w - t)
	}
	if st == nil {
		return nil, res
	}
	return st, res
}
