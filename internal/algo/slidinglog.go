package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// slidingLog is the step of an algorithms.SlidingLog.
type slidingLog algorithms.SlidingLog

// refund gives back n units charged at time at, if that request still
// counts. When it is in the newest record (nothing was admitted since in
// another microsecond), its units come off that record, exactly as if they
// had never been charged. Otherwise the n oldest units still counting are
// dropped: they are available again at once, as the refunded ones would be,
// but they would have expired before the refunded ones, so until the
// refunded request would have expired the key gets back less than n, never
// more. A refund moves the key's latest time on to now, as an admission
// does. See Refund.
func (a slidingLog) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st, ok := logRefund(stateAs[*slidingLogState](a.name(), state), int64(a.Window/time.Microsecond), 1, now, at, n)
	if !ok {
		return state, false
	}
	return st, true
}

// name returns "sliding_log".
func (slidingLog) name() string { return algorithms.SlidingLog{}.Kind().String() }

// decide runs one sliding-log step; see Decide.
func (a slidingLog) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	st, res := logStep(
		stateAs[*slidingLogState](a.name(), state),
		a.Limit,
		int64(a.Window/time.Microsecond),
		1,
		now,
		cost,
	)
	if st == nil {
		return nil, res
	}
	return st, res
}
