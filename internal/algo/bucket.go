package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// bucketState is the state TokenBucket and GCRA share: the theoretical
// arrival time TAT + Frac/k µs (k the rate's count in lowest terms with its
// period), at which the key is back at full capacity; the latest time it was
// decided at; the rate count it was written under, so that a changed rate
// can carry over what was used; and, while a refund must still tell what
// came before the rate count last changed, Since, Booked and BookedCount
// (see changed), 0 otherwise.
type bucketState struct {
	TAT         int64
	Frac        int64
	Latest      int64
	Count       int64
	Since       int64
	Booked      int64
	BookedCount int64
}

// bucket is the exact arithmetic TokenBucket and GCRA share. The rate is k
// per p µs in lowest terms, so the emission interval T = p/k µs is q + r/k µs
// with q = p div k and r = p mod k, and every time is held as whole
// microseconds plus a fraction in 1/k µs (a span). Reducing the rate keeps k
// small for round rates (10^6 per day is 1 per 86,400µs, so k = 1), and
// products that could pass 2^53, such as n×r, go through mulDiv, so every
// rate in range is exact.
type bucket struct {
	burst, k, p, q, r int64
	count, period     int64 // the rate as given, period in µs
}

func newBucket(burst int64, rate algorithms.Rate) bucket {
	period := int64(rate.Period / time.Microsecond)
	g := gcd(rate.Count, period)
	k, p := rate.Count/g, period/g
	return bucket{burst: burst, k: k, p: p, q: p / k, r: p % k, count: rate.Count, period: period}
}

// span is a duration of us + f/k µs, with 0 <= f < k.
type span struct{ us, f int64 }

// times returns n×T. n×q is at most the refill time of n tokens, which
// Validate bounds by 2^50µs for every n up to the burst.
func (b bucket) times(n int64) span {
	if b.r == 0 {
		return span{n * b.q, 0} // a whole number of µs per interval
	}
	carry, f := mulDiv(n, b.r, b.k)
	return span{n*b.q + carry, f}
}

func (b bucket) add(x, y span) span {
	s := span{x.us + y.us, x.f + y.f}
	if s.f >= b.k {
		s.us, s.f = s.us+1, s.f-b.k
	}
	return s
}

// sub returns x - y for x >= y.
func (b bucket) sub(x, y span) span {
	s := span{x.us - y.us, x.f - y.f}
	if s.f < 0 {
		s.us, s.f = s.us-1, s.f+b.k
	}
	return s
}

func less(x, y span) bool { return x.us < y.us || x.us == y.us && x.f < y.f }

// ceil returns x in whole microseconds, rounded up.
func (x span) ceil() int64 {
	if x.f > 0 {
		return x.us + 1
	}
	return x.us
}

// tokens returns floor(x / T) = floor((x.us×k + x.f) / p): how many whole
// emission intervals fit in x. x is at most burst × T, so the result is at
// most the burst.
func (b bucket) tokens(x span) int64 {
	n, rem := mulDiv(x.us, b.k, b.p)
	return n + (rem+x.f)/b.p
}

// usedAt returns the decision time for a decision at now on st, the later
// of now and the key's latest time; how far the key's TAT is ahead of it,
// in b's units; and whether st was written under another rate count and
// still holds tokens then.
//
// Such a state is converted at the decision's time, in tokens: what the key
// had used then at the old rate (TAT - eff over the old interval) is charged
// at b's rate, exactly, rounded up to b's fraction of a microsecond, so a
// changed rate never gives back what was used, nor takes more; the decision
// must then write it (see step). One that holds no tokens any more is as
// no state: nothing to convert, nor to write. A valid state is never more
// than 2^50µs ahead; the caps keep any other in range.
func (b bucket) usedAt(st *bucketState, now time.Time) (eff int64, used span, converted bool) {
	eff = micros(now)
	if st == nil {
		return eff, span{}, false
	}
	eff = max(eff, st.Latest)
	converted = st.Count != b.count
	if st.TAT < eff || st.TAT == eff && st.Frac <= 0 {
		return eff, span{}, false
	}
	if !converted || st.Count <= 0 || st.Count > EnvelopeMaxLimit {
		// A count no decision writes reads as b's own.
		return eff, span{min(st.TAT-eff, maxDuration), min(max(st.Frac, 0), b.k-1)}, converted
	}
	old := newBucket(0, algorithms.Rate{Count: st.Count, Period: duration(b.period)})
	ahead := span{min(st.TAT-eff, maxDuration), min(max(st.Frac, 0), old.k-1)}
	return eff, b.convert(ahead, old), true
}

// convert returns x, a span at old's rate count (same period), as the span
// the same tokens take at b's: x × old.count / b.count, rounded up to 1/b.k
// µs, at most 2^50µs. x is x.us + x.f/old.k µs, so the product is
// (x.us × old.count + x.f × g) / b.count with g = old.count / old.k, formed
// in 128 bits.
func (b bucket) convert(x span, old bucket) span {
	if b.count < old.count {
		if limit, _ := mulDiv(maxDuration, b.count, old.count); x.us > limit {
			return span{maxDuration, 0}
		}
	}
	q, rem := mulDiv(x.us, old.count, b.count)
	rem += x.f * (old.count / old.k)
	q, rem = q+rem/b.count, rem%b.count
	// rem/b.count µs, in 1/b.k µs: rem/g with g = b.count/b.k, rounded up.
	g := b.count / b.k
	f := (rem + g - 1) / g
	if f >= b.k {
		q, f = q+1, f-b.k
	}
	if q >= maxDuration {
		return span{maxDuration, 0}
	}
	return span{q, f}
}

// refund gives back n tokens charged at time at; see TokenBucket.Refund. It
// returns nil when nothing comes back.
func (b bucket) refundState(st *bucketState, now, at time.Time, n int64) *bucketState {
	if st == nil || st.Count != b.count || b.before(st, micros(at)) {
		// No state, or one written under another rate count since the
		// charge, if only for a while: what the charge took is not what
		// the key counts now, nor is what has refilled since, so nothing
		// comes back.
		return nil
	}
	eff, used, _ := b.usedAt(st, now)
	if used == (span{}) {
		return nil // a full bucket: nothing counts, nothing to give back
	}
	a := micros(at)
	back := b.times(n)
	if eff > a {
		// What has refilled since the charge: the bucket may have been full
		// since, had the request never been made.
		back = b.sub(back, span{eff - a, 0})
	}
	// Bookings made after the charge: the key is full again later than the
	// charge alone would make it, eff+used against at+capacity, and those
	// bookings' turns were set behind the refunded one.
	if later := b.sub(b.add(used, span{eff - a, 0}), b.times(b.burst)); less(span{}, later) {
		back = b.sub(back, later)
	}
	if !less(span{}, back) {
		return nil
	}
	if less(back, used) {
		used = b.sub(used, back)
	} else {
		used = span{}
	}
	st.TAT, st.Frac, st.Latest, st.Count = eff+used.us, used.f, eff, b.count
	return st
}

// step runs one decision; see TokenBucket and GCRA for the semantics. It
// returns st, updated when cost > 0, or a new state if st was nil. slack is
// 0 for a decision; for a reservation it is the longest wait in µs the
// caller accepts, and delay is the wait until the booked request's turn.
func (b bucket) step(
	st *bucketState,
	now time.Time,
	cost, slack int64,
) (_ *bucketState, res algorithms.Result, delay time.Duration) {
	st, delay = b.stepInto(st, nil, now, cost, slack, &res)
	return st, res, delay
}

// stepInto is step, writing a new state into spare, if not nil, rather
// than a new allocation, and the Result into res, which it overwrites.
func (b bucket) stepInto(
	st, spare *bucketState,
	now time.Time,
	cost, slack int64,
	res *algorithms.Result,
) (_ *bucketState, delay time.Duration) {
	t := micros(now)
	// used: the time until the key is full again, from eff.
	eff, used, converted := b.usedAt(st, now)
	gap := eff - t // the caller's clock behind the key's latest time
	capacity := b.times(b.burst)

	*res = algorithms.Result{Limit: b.burst, At: time.UnixMicro(eff)}
	limit := b.add(capacity, span{slack, 0})
	if after := b.add(used, b.times(need(cost))); !less(limit, after) {
		res.Allowed = true
		if less(capacity, after) {
			// A booking: its turn comes when the key has drained to the
			// capacity. At is that turn, to the microsecond below.
			wait := b.sub(after, capacity)
			delay = duration(wait.ceil() + gap)
			res.At = time.UnixMicro(eff + wait.us)
		}
		if cost > 0 {
			used = after
		}
	} else {
		// The wait until its turn, whatever the slack: the shortest wait
		// after which the same request would be admitted at once.
		res.RetryAfter = duration(b.sub(after, capacity).ceil() + gap)
	}
	if used != (span{}) {
		res.ResetAfter = duration(used.ceil() + gap)
	}
	if !less(capacity, used) {
		res.Remaining = b.tokens(b.sub(capacity, used))
	}
	since, booked, bookedCount := b.changed(st, eff)
	switch {
	case (cost <= 0 || !res.Allowed && cost == 1) && !converted:
		// An inspection changes nothing, and neither does a denial of cost
		// 1 (see Decide).
		return st, delay
	case cost <= 0:
		// An inspection that converted the state: it keeps the result in
		// a state of its own, leaving the one it was given as it was, so
		// that a store may inspect a state it shares.
		st = &bucketState{}
	case st == nil && spare != nil:
		st = spare
	case st == nil:
		st = &bucketState{}
	}
	st.TAT, st.Frac, st.Latest, st.Count = eff+used.us, used.f, eff, b.count
	st.Since, st.Booked, st.BookedCount = since, booked, bookedCount
	return st, delay
}

// changed returns the Since, Booked and BookedCount a write at eff leaves
// on st.
//
// A refund subtracts what has refilled since the charge at the rate it is
// given, which is what the key refilled only if the rate count has not
// changed since: a key changed to a faster rate and back drains more in
// between. So a write under a rate count the state was not written under
// marks the change, and until a refund can no longer give anything back
// for what came before it, no refund does (see before). Since, the latest
// change (at least 1µs, so that 0 means none), is later than every charge
// made before it. A booking's Result.At is its turn, later than the time it
// was made, so Booked, the latest time, rounded up, at which a key left by
// a rate count while holding tokens would have been full again, is later
// by at least a capacity than every booking made under that count before;
// it bounds the refunds of that count, BookedCount, or of every count (0)
// once keys left by two counts have set it. All three go at the first
// write under the same rate count from which none counts (see keptUntil).
func (b bucket) changed(st *bucketState, eff int64) (since, booked, bookedCount int64) {
	switch {
	case st == nil:
		return 0, 0, 0
	case st.Count == b.count:
		if st.Since != 0 && eff >= b.keptUntil(&bucketState{Since: st.Since, Booked: st.Booked}) {
			return 0, 0, 0
		}
		return st.Since, st.Booked, st.BookedCount
	}
	booked, bookedCount = st.Booked, st.BookedCount
	if st.TAT > eff || st.TAT == eff && st.Frac > 0 {
		full := st.TAT
		if st.Frac > 0 {
			full++
		}
		if booked == 0 || bookedCount == st.Count {
			booked, bookedCount = max(booked, full), st.Count
		} else {
			booked, bookedCount = max(booked, full), 0
		}
	}
	return max(eff, st.Since, 1), booked, bookedCount
}

// before reports whether a charge at time at may have been made before the
// rate count last changed (see changed): at before Since, or a booking of
// this rate count whose turn is at least a capacity before Booked.
func (b bucket) before(st *bucketState, at int64) bool {
	if at < st.Since {
		return true
	}
	return st.Booked != 0 && (st.BookedCount == 0 || st.BookedCount == b.count) &&
		!less(span{st.Booked, 0}, b.add(span{at, 0}, b.times(b.burst)))
}

// keptUntil returns the µs from which st no longer counts: when the bucket
// is full again, and while Since is set no earlier than a capacity's refill
// time after it, nor than Booked, from when no refund of a charge made
// before the rate count changed gives anything back.
func (b bucket) keptUntil(st *bucketState) int64 {
	until := st.TAT
	if st.Frac > 0 {
		until++
	}
	if st.Since != 0 {
		until = max(until, st.Since+b.times(b.burst).ceil(), st.Booked)
	}
	return until
}

// The token bucket and GCRA are one step under two names (see
// algorithms.GCRA): a bucket, built by newBucket from a TokenBucket's
// capacity and refill rate or a GCRA's burst and rate. Their states are one
// type, *bucketState; a store keeps each kind's under the kind's own name.
// The methods below take and return a State, as every algorithm's step
// does (see Decide).

// bucketStateOf returns state as a bucket's.
func bucketStateOf(state keyState) *bucketState {
	return stateAs[*bucketState]("the token bucket and GCRA", state)
}

// decide runs one step; see Decide.
func (b bucket) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	st, res, _ := b.step(bucketStateOf(state), now, cost, 0)
	if st == nil {
		return nil, res
	}
	return st, res
}

// reserve books a request; see Reserve.
func (b bucket) reserve(
	state keyState,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (keyState, algorithms.Result, time.Duration) {
	st, res, delay := b.step(bucketStateOf(state), now, cost, int64(maxWait/time.Microsecond))
	if st == nil {
		return nil, res, delay
	}
	return st, res, delay
}

// refund gives back n units charged at at; see Refund.
func (b bucket) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := b.refundState(bucketStateOf(state), now, at, n)
	if st == nil {
		return state, false
	}
	return st, true
}

// keeps reports whether the state was written under this rate count, or
// holds no tokens at now: one written under another that still does is
// converted (see algorithms.GCRA).
func (b bucket) keeps(state keyState, now time.Time, _ int64) bool {
	_, _, converted := b.usedAt(bucketStateOf(state), now)
	return !converted
}

// pack returns TAT and the latest time, tagged with the rate count, when
// TAT is a whole microsecond.
func (b bucket) pack(state keyState) (Words, int64, bool) { return b.packState(bucketStateOf(state)) }

// unpack returns the state pack packed.
func (bucket) unpack(w Words, tag int64, into keyState) keyState {
	st, _ := into.(*bucketState)
	if st == nil {
		st = new(bucketState)
	}
	unpackBucket(st, w, tag)
	return st
}

// clone returns a copy of state that shares nothing with it.
func (bucket) clone(state keyState) keyState {
	if st := bucketStateOf(state); st != nil {
		c := *st
		return &c
	}
	return nil
}

// inspect decides cost, taken as an inspection, on the state pack packed;
// it keeps the state unless its tag, the rate count it was written under,
// is not the rate's count and it still holds tokens.
func (b bucket) inspect(w Words, tag int64, now time.Time, cost int64) (algorithms.Result, bool) {
	var st bucketState
	unpackBucket(&st, w, tag)
	_, _, converted := b.usedAt(&st, now)
	_, res, _ := b.step(&st, now, min(cost, -cost), 0)
	return res, !converted
}
