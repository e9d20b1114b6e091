package algorithms

import (
	"fmt"
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
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

// fixedWindowState is the count admitted in the window starting at Start
// (microseconds since the Unix epoch).
type fixedWindowState struct {
	Start int64
	Count int64
}

// name returns "fixed_window".
func (FixedWindow) name() string { return fixedWindowKind.name }

// Kind returns the registry's "fixed_window".
func (FixedWindow) Kind() *Kind { return fixedWindowKind }

// params returns the parameters in their shared form.
func (a FixedWindow) params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// quota returns the limit per window.
func (a FixedWindow) quota() algobridge.Quota {
	return algobridge.Quota{Limit: a.Limit, Window: a.Window}
}

// String describes the algorithm, such as "fixed_window 100/1m".
func (a FixedWindow) String() string { return describe(a) }

func (FixedWindow) sealed() {}

// scope returns the window.
func (a FixedWindow) scope() algobridge.Scope { return algobridge.Scope{Window: a.Window} }

// maxCost returns Limit.
func (a FixedWindow) maxCost() int64 { return a.Limit }

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

// refund takes n off the count, not below zero, when at is in the key's
// window. A request charged in an earlier window counts no more, so nothing
// comes back for it. See Algorithm's refund.
func (a FixedWindow) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := stateAs[*fixedWindowState](a.name(), state)
	w, t, n0 := int64(a.Window/time.Microsecond), micros(at), micros(now)
	// The charge's window must be the key's, and not over.
	if st == nil || st.Start != t-floorMod(t, w) || st.Start+w <= n0-floorMod(n0, w) || st.Count <= 0 {
		return state, false
	}
	st.Count -= min(n, st.Count)
	return st, true
}

// decide runs one fixed-window step; see Algorithm's decide.
func (a FixedWindow) decide(state keyState, now time.Time, cost int64) (keyState, Result) {
	st, res := a.step(stateAs[*fixedWindowState](a.name(), state), now, cost)
	res.charged(fixedWindowKind, a.params(), cost)
	if st == nil {
		return nil, res
	}
	return st, res
}

// step is Decide on the state's own type. It returns st, updated when a
// request is admitted, or a new state if st was nil.
func (a FixedWindow) step(st *fixedWindowState, now time.Time, cost int64) (_ *fixedWindowState, res Result) {
	return a.stepInto(st, nil, now, cost, &res), res
}

// stepInto is step, writing a new state into spare, if not nil, rather
// than a new allocation, and the Result into res, which it overwrites.
func (a FixedWindow) stepInto(st, spare *fixedWindowState, now time.Time, cost int64, res *Result) *fixedWindowState {
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
	*res = Result{Limit: a.Limit, At: time.UnixMicro(at)}
	if count+need(cost) <= a.Limit {
		res.Allowed = true
		if cost > 0 {
			count += cost
			if st == nil {
				st = spare
			}
			if st == nil {
				st = &fixedWindowState{}
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
	return st
}
