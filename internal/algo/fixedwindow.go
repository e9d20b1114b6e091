package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// fixedWindow is the step of an algorithms.FixedWindow.
type fixedWindow algorithms.FixedWindow

// fixedWindowState is the count admitted in the window starting at Start
// (microseconds since the Unix epoch).
type fixedWindowState struct {
	Start int64
	Count int64
}

// name returns "fixed_window".
func (fixedWindow) name() string { return algorithms.FixedWindow{}.Kind().String() }

// refund takes n off the count, not below zero, when at is in the key's
// window. A request charged in an earlier window counts no more, so nothing
// comes back for it. See Refund.
func (a fixedWindow) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := stateAs[*fixedWindowState](a.name(), state)
	w, t, n0 := int64(a.Window/time.Microsecond), micros(at), micros(now)
	// The charge's window must be the key's, and not over.
	if st == nil || st.Start != t-floorMod(t, w) || st.Start+w <= n0-floorMod(n0, w) || st.Count <= 0 {
		return state, false
	}
	st.Count -= min(n, st.Count)
	return st, true
}

// decide runs one fixed-window step; see Decide.
func (a fixedWindow) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	st, res := a.step(stateAs[*fixedWindowState](a.name(), state), now, cost)
	if st == nil {
		return nil, res
	}
	return st, res
}

// step is Decide on the state's own type. It returns st, updated when a
// request is admitted, or a new state if st was nil.
func (a fixedWindow) step(
	st *fixedWindowState,
	now time.Time,
	cost int64,
) (_ *fixedWindowState, res algorithms.Result) {
	return a.stepInto(st, nil, now, cost, &res), res
}

// stepInto is step, writing a new state into spare, if not nil, rather
// than a new allocation, and the Result into res, which it overwrites.
func (a fixedWindow) stepInto(
	st, spare *fixedWindowState,
	now time.Time,
	cost int64,
	res *algorithms.Result,
) *fixedWindowState {
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
	*res = algorithms.Result{Limit: a.Limit, At: time.UnixMicro(at)}
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
