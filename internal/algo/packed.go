package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// pack returns the window's end and the count; the tag is 0.
func (a fixedWindow) pack(state keyState) (Words, int64, bool) {
	st := stateAs[*fixedWindowState](a.name(), state)
	if st == nil || st.Start < 0 {
		return Words{}, 0, false
	}
	return Words{st.Start + int64(a.Window/time.Microsecond), st.Count}, 0, true
}

// unpack returns the state Pack packed.
func (a fixedWindow) unpack(w Words, _ int64, into keyState) keyState {
	st, _ := into.(*fixedWindowState)
	if st == nil {
		st = new(fixedWindowState)
	}
	*st = fixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	return st
}

// clone returns a copy of state that shares nothing with it.
func (a fixedWindow) clone(state keyState) keyState {
	if st := stateAs[*fixedWindowState](a.name(), state); st != nil {
		c := *st
		return &c
	}
	return nil
}

// inspect decides cost, taken as an inspection, on the state Pack packed;
// it always keeps the state.
func (a fixedWindow) inspect(w Words, tag int64, now time.Time, cost int64) (algorithms.Result, bool) {
	st := fixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	_, res := a.step(&st, now, min(cost, -cost))
	return res, true
}

// packState packs a state whose TAT is whole and not before its latest time, as
// every state step and refund write, and that marks no rate count change
// (Since, Booked and BookedCount 0): TAT is then when
// it stops counting (see bucket.usedAt). Another gives the time it stops
// counting (see keptUntil) and ok false.
func (b bucket) packState(st *bucketState) (Words, int64, bool) {
	switch {
	case st == nil:
		return Words{}, 0, false
	case st.Frac != 0 || st.Since != 0 || st.Booked != 0 || st.BookedCount != 0 || st.Latest < 0 || st.TAT < st.Latest:
		return Words{max(b.keptUntil(st), 0)}, 0, false
	}
	return Words{st.TAT, st.Latest}, st.Count, true
}

func unpackBucket(st *bucketState, w Words, tag int64) {
	*st = bucketState{TAT: w[0], Latest: w[1], Count: tag}
}
