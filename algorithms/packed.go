package algorithms

import "time"

// Words is a state packed into two integers by a Packer.
type Words [2]int64

// Packer is an algorithm whose state a store can keep inline, as two words
// and a tag, rather than as a pointer to a State: FixedWindow, TokenBucket
// and GCRA. An in-memory store probes for it with a type assertion, so that
// a key costs it two words instead of a pointer and an allocation; an
// algorithm without it is kept boxed, exactly as well.
//
// The tag is what many keys' states share, such as the rate count a bucket
// was written under: a store keeps it once for a table of states and packs
// a state whose tag differs as it would one that does not pack. Algorithms
// of one Kind and Scope pack and unpack alike, so a store may use any of
// them for a table of that Kind and Scope.
type Packer interface {
	Algorithm

	// Pack returns state, which this algorithm's Decide, Reserve or Refund
	// returned, as words and a tag, or ok false when it has no packed form
	// (a bucket whose TAT has a fraction of a microsecond, or whose rate
	// count changed lately, which refunds must still see). The first word is
	// the microsecond, since the Unix epoch, from which the state no
	// longer counts, at least 0: a decision or refund at that microsecond
	// or later finds it as it would find no state, with the same Result.
	// It is when the Result.ResetAfter of the decision that wrote it runs
	// out, to the microsecond. With ok false, the first word, if above 0,
	// is still when the state stops counting, which may then be later
	// than that, and depend on the algorithm's limit (a bucket's
	// capacity), not only its Kind and Scope: a store keeps the state
	// until then, as Pack of the algorithm that decided says.
	Pack(state State) (w Words, tag int64, ok bool)

	// Unpack returns the state that w and tag, from Pack, stand for. It
	// reuses into's memory when into is a state of this algorithm's type,
	// and allocates otherwise.
	Unpack(w Words, tag int64, into State) State

	// Inspect returns the Result Decide returns for the state w and tag
	// stand for, at now, with a cost <= 0 (a cost above 0 is taken as its
	// negative): an inspection, which needs no state of its own; and
	// whether that inspection leaves the state as it is (Keeper.Keeps),
	// as it does unless the state was written under another rate count.
	// It allocates nothing, so that stores can inspect a packed state
	// under a read lock without sharing a scratch state; one that does not
	// keep the state must be decided under the write lock, and written.
	Inspect(w Words, tag int64, now time.Time, cost int64) (res Result, keeps bool)
}

var (
	_ Packer = FixedWindow{}
	_ Packer = TokenBucket{}
	_ Packer = GCRA{}
)

// Pack returns the window's end and the count; the tag is 0.
func (a FixedWindow) Pack(state State) (Words, int64, bool) {
	st := stateAs[*FixedWindowState](a.Name(), state)
	if st == nil || st.Start < 0 {
		return Words{}, 0, false
	}
	return Words{st.Start + int64(a.Window/time.Microsecond), st.Count}, 0, true
}

// Unpack returns the state Pack packed.
func (a FixedWindow) Unpack(w Words, _ int64, into State) State {
	st, _ := into.(*FixedWindowState)
	if st == nil {
		st = new(FixedWindowState)
	}
	*st = FixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	return st
}

// Inspect decides cost, taken as an inspection, on the state Pack packed;
// it always keeps the state.
func (a FixedWindow) Inspect(w Words, tag int64, now time.Time, cost int64) (Result, bool) {
	st := FixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
	_, res := a.step(&st, now, min(cost, -cost))
	return res, true
}

// Pack returns TAT and the latest time, tagged with the rate count, when
// TAT is a whole microsecond.
func (a TokenBucket) Pack(state State) (Words, int64, bool) {
	return newBucket(a.Capacity, a.Refill).pack((*bucketState)(stateAs[*TokenBucketState](a.Name(), state)))
}

// Unpack returns the state Pack packed.
func (a TokenBucket) Unpack(w Words, tag int64, into State) State {
	st, _ := into.(*TokenBucketState)
	if st == nil {
		st = new(TokenBucketState)
	}
	unpackBucket((*bucketState)(st), w, tag)
	return st
}

// Inspect decides cost, taken as an inspection, on the state Pack packed;
// it keeps the state unless its tag, the rate count it was written under,
// is not Refill.Count and it still holds tokens.
func (a TokenBucket) Inspect(w Words, tag int64, now time.Time, cost int64) (Result, bool) {
	var st bucketState
	unpackBucket(&st, w, tag)
	b := newBucket(a.Capacity, a.Refill)
	_, _, converted := b.usedAt(&st, now)
	_, res, _ := b.step(&st, now, min(cost, -cost), 0)
	return res, !converted
}

// Pack returns TAT and the latest time, tagged with the rate count, when
// TAT is a whole microsecond.
func (a GCRA) Pack(state State) (Words, int64, bool) {
	return newBucket(a.Burst, a.Rate).pack((*bucketState)(stateAs[*GCRAState](a.Name(), state)))
}

// Unpack returns the state Pack packed.
func (a GCRA) Unpack(w Words, tag int64, into State) State {
	st, _ := into.(*GCRAState)
	if st == nil {
		st = new(GCRAState)
	}
	unpackBucket((*bucketState)(st), w, tag)
	return st
}

// Inspect decides cost, taken as an inspection, on the state Pack packed;
// it keeps the state unless its tag, the rate count it was written under,
// is not Rate.Count and it still holds tokens.
func (a GCRA) Inspect(w Words, tag int64, now time.Time, cost int64) (Result, bool) {
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
func (b bucket) pack(st *bucketState) (Words, int64, bool) {
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
