package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// slidingWindow is the step of an algorithms.SlidingWindow.
type slidingWindow algorithms.SlidingWindow

// slidingWindowState is the sliding window counter's per-key state: one
// record per sub-window, stamped with the sub-window's start (see
// slidingLogState).
type slidingWindowState slidingLogState

// name returns "sliding_window".
func (slidingWindow) name() string { return algorithms.SlidingWindow{}.Kind().String() }

// refund gives back n units charged at time at as SlidingLog.Refund does,
// with the sub-window in place of the microsecond: a request admitted in the
// newest sub-window that still counts gets its units back exactly; one from
// an older sub-window frees the oldest units. See Refund.
func (a slidingWindow) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	w := int64(a.Window / time.Microsecond)
	st, ok := logRefund((*slidingLogState)(stateAs[*slidingWindowState](a.name(), state)), w, w/a.SubWindows, now, at, n)
	if !ok {
		return state, false
	}
	return (*slidingWindowState)(st), true
}

// decide runs one sliding-window-counter step; see Decide.
func (a slidingWindow) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	w := int64(a.Window / time.Microsecond)
	st, res := logStep(
		(*slidingLogState)(stateAs[*slidingWindowState](a.name(), state)),
		a.Limit,
		w,
		w/a.SubWindows,
		now,
		cost,
	)
	if st == nil {
		return nil, res
	}
	return (*slidingWindowState)(st), res
}
