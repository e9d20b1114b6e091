package algorithms

import (
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// packer is an algorithm whose state a store can keep inline, as two words
// and a tag, rather than as a pointer to a state: FixedWindow, TokenBucket
// and GCRA. An in-memory store asks for it (internal/algo.Packs), so that a
// key costs it two words instead of a pointer and an allocation; an
// algorithm without it is kept boxed, exactly as well. See
// internal/algo.Pack, Unpack and Inspect for what each method does.
type packer interface {
	Algorithm
	pack(state keyState) (w algobridge.Words, tag int64, ok bool)
	unpack(w algobridge.Words, tag int64, into keyState) keyState
	inspect(w algobridge.Words, tag int64, now time.Time, cost int64) (res Result, keeps bool)
	clone(state keyState) keyState
}

var (
	_ packer = FixedWindow{}
	_ packer = TokenBucket{}
	_ packer = GCRA{}
)

// pack returns the window's end and the count; the tag is 0.
func (a FixedWindow) pack(state keyState) (algobridge.Words, int64, bool) {
	st := stateAs[*fixedWindowState](a.name(), state)
	if st == nil || st.Start < 0 {
		return algobridge.Words{}, 0, false
	}
	return algobridge.Words{st.Start + int64(a.Window/time.Microsecond), st.Count}, 0, true
}

// unpack returns the state Pack packed.
func (a FixedWindow) unpack(w algobridge.Words, _ int64, into keyState) keyState {
	st, _ := into.(*fixedWindowState)
	if st == nil {
		st = new(fixedWindowState)
	}
	*st = fixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	return st
}

// clone returns a copy of state that shares nothing with it.
func (a FixedWindow) clone(state keyState) keyState {
	if st := stateAs[*fixedWindowState](a.name(), state); st != nil {
		c := *st
		return &c
	}
	return nil
}

// inspect decides cost, taken as an inspection, on the state Pack packed;
// it always keeps the state.
func (a FixedWindow) inspect(w algobridge.Words, tag int64, now time.Time, cost int64) (Result, bool) {
	st := fixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	_, res := a.step(&st, now, min(cost, -cost))
	return res, true
}

// pack returns TAT and the latest time, tagged with the rate count, when
// TAT is a whole microsecond.
func (a TokenBucket) pack(state keyState) (algobridge.Words, int64, bool) {
	return newBucket(a.Capacity, a.Refill).pack((*bucketState)(stateAs[*tokenBucketState](a.name(), state)))
}

// clone returns a copy of state that shares nothing with it.
func (a TokenBucket) clone(state keyState) keyState {
	if st := stateAs[*tokenBucketState](a.name(), state); st != nil {
		c := *st
		return &c
	}
	return nil
}

// unpack returns the state Pack packed.
func (a TokenBucket) unpack(w algobridge.Words, tag int64, into keyState) keyState {
	st, _ := into.(*tokenBucketState)
	if st == nil {
		st = new(tokenBucketState)
	}
	unpackBucket((*bucketState)(st), w, tag)
	return st
}

// inspect decides cost, taken as an inspection, on the state Pack packed;
// it keeps the state unless its tag, the rate count it was written under,
// is not Refill.Count and it still holds tokens.
func (a TokenBucket) inspect(w algobridge.Words, tag int64, now time.Time, cost int64) (Result, bool) {
	var st bucketState
	unpackBucket(&st, w, tag)
	b := newBucket(a.Capacity, a.Refill)
	_, _, converted := b.usedAt(&st, now)
	_, res, _ := b.step(&st, now, min(cost, -cost), 0)
	return res, !converted
}

// pack returns TAT and the latest time, tagged with the rate count, when
// TAT is a whole microsecond.
func (a GCRA) pack(state keyState) (algobridge.Words, int64, bool) {
	return newBucket(a.Burst, a.Rate).pack((*bucketState)(stateAs[*gcraState](a.name(), state)))
}

// clone returns a copy of state that shares nothing with it.
func (a GCRA) clone(state keyState) keyState {
	if st := stateAs[*gcraState](a.name(), state); st != nil {
		c := *st
		return &c
	}
	return nil
}

// unpack returns the state Pack packed.
func (a GCRA) unpack(w algobridge.Words, tag int64, into keyState) keyState {
	st, _ := into.(*gcraState)
	if st == nil {
		st = new(gcraState)
	}
	unpackBucket((*bucketState)(st), w, tag)
	return st
}

// inspect decides cost, taken as an inspection, on the state Pack packed;
// it keeps the state unless its tag, the rate count it was written under,
// is not Rate.Count and it still holds tokens.
func (a GCRA) inspect(w algobridge.Words, tag int64, now time.Time, cost int64) (Result, bool) {
	var st bucketState
	unpackBucket(&st, w, tag)
	b := newBucket(a.Burst, a.Rate)
	_, _, converted := b.usedAt(&st, now)
	_, res, _ := b.step(&st, now, min(cost, -cost), 0)
	return res, !converted
}

// pack packs a state whose TAT is whole and not before its latest time, as
// every state step and refund write, and that marks no rate count change
// (Since, Booked and BookedCount 0): TAT is then when
// it stops counting (see bucket.usedAt). Another gives the time it stops
// counting (see keptUntil) and ok false.
func (b bucket) pack(st *bucketState) (algobridge.Words, int64, bool) {
	switch {
	case st == nil:
		return algobridge.Words{}, 0, false
	case st.Frac != 0 || st.Since != 0 || st.Booked != 0 || st.BookedCount != 0 || st.Latest < 0 || st.TAT < st.Latest:
		return algobridge.Words{max(b.keptUntil(st), 0)}, 0, false
	}
	return algobridge.Words{st.TAT, st.Latest}, st.Count, true
}

func unpackBucket(st *bucketState, w algobridge.Words, tag int64) {
	*st = bucketState{TAT: w[0], Latest: w[1], Count: tag}
}
