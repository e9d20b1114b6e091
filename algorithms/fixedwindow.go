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

// FixedWindowState is the count admitted in the window starting at Start
// (microseconds since the Unix epoch).
type FixedWindowState struct {
	Start int64
	Count int64
}

// Name returns "fixed_window".
func (FixedWindow) Name() string { return fixedWindowKind.name }

// Kind returns the registry's "fixed_window".
func (FixedWindow) Kind() *Kind { return fixedWindowKind }

// Params returns the parameters in their shared form.
func (a FixedWindow) Params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// Quota returns the limit per window.
func (a FixedWindow) Quota() Quota { return Quota{Limit: a.Limit, Window: a.Window} }

// String describes the algorithm, such as "fixed_window 100/1m".
func (a FixedWindow) String() string { return describe(a) }

func (FixedWindow) sealed() {}

// Scope returns the window.
func (a FixedWindow) Scope() Scope { return Scope{Window: a.Window} }

// MaxCost returns Limit.
func (a FixedWindow) MaxCost() int64 { return a.Limit }

// Validate checks Limit in [1, 2^50] and Window a whole number of
// microseconds in [1µs, 2^50µs].
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

// Refund takes n off the count, not below zero, when at is in the key's
// window. A request charged in an earlier window counts no more, so nothing
// comes back for it. See Algorithm.Refund.
func (a FixedWindow) Refund(state State, now, at time.Time, n int64) (State, bool) {
	st := stateAs[*FixedWindowState](a.Name(), state)
	w, t, n0 := int64(a.Window/time.Microsecond), micros(at), micros(now)
	// The charge's window must be the key's, and not over.
	if st == nil || st.Start != t-floorMod(t, w) || st.Start+w <= n0-floorMod(n0, w) || st.Count <= 0 {
		return state, false
	}
	st.Count -= min(n, st.Count)
	return st, true
}

// Decide runs one fixed-window step; see Algorithm.Decide.
func (a FixedWindow) Decide(state State, now time.Time, cost int64) (State, Result) {
	st, res := a.step(stateAs[*FixedWindowState](a.Name(), state), now, cost)
	res.charged(fixedWindowKind, a.Params(), cost)
	if st == nil {
		return nil, res
	}
	return st, res
}

// step is Decide on the state's own type. It returns st, updated when a
// request is admitted, or a new state if st was nil.
func (a FixedWindow) step(st *FixedWindowState, now time.Time, cost int64) (*FixedWindowState, Result) {
	w := int64(a.Window / time.Microsecond)
	t := micros(now)
	start, at := t-floorMod(t, w), t
	var count int64
	if st != nil {
		// A window later than now's means the clock stepped back: keep
		// counting in it, so nothing extra gets through.
		if st.Start > start {
			start, at = st.Start, st.Start
		}
		if st.Start == start {
			count = st.Count
		}
	}
	res := Result{Limit: a.Limit, At: time.UnixMicro(at)}
	if count+need(cost) <= a.Limit {
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
	res.Remaining = max(0, a.Limit-count)
	if count > 0 {
		res.ResetAfter = duration(start + w - t)
	}
	return st, res
}
