package algorithms

import (
	"fmt"
	"math/bits"
	"time"
)

// bucketState is the state TokenBucket and GCRA share: the theoretical
// arrival time TAT + Frac/k µs (k the rate's count in lowest terms with its
// period), at which the key is back at full capacity; the latest time it was
// decided at; and the rate count it was written under, so that a changed
// rate can carry over what was used.
type bucketState struct {
	TAT    int64
	Frac   int64
	Latest int64
	Count  int64
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

func newBucket(burst int64, rate Rate) bucket {
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

// tokensUp is x / T rounded up, at most maxCount. It splits x.us into whole
// periods and the rest, so that no product passes 2^53 in the Lua scripts'
// version either.
func (b bucket) tokensUp(x span) int64 {
	whole := x.us / b.p
	if whole >= (maxCount+b.k-1)/b.k {
		return maxCount // only a state no valid parameters write
	}
	n, rem := mulDiv(x.us%b.p, b.k, b.p)
	n += whole * b.k
	rem += x.f
	n += rem / b.p
	if rem%b.p > 0 {
		n++
	}
	return min(n, maxCount)
}

// timesUpTo is n×T, at most maxDuration µs.
func (b bucket) timesUpTo(n int64) span {
	if b.q > 0 && n > maxDuration/b.q {
		return span{maxDuration, 0}
	}
	if s := b.times(n); s.us < maxDuration {
		return s
	}
	return span{maxDuration, 0}
}

// used returns how far st's TAT is ahead of its latest time, under b's rate.
// A state written under another rate count is converted: the tokens it had
// used, rounded up to a whole token, are charged again at b's rate, but never
// past its TAT, the time the key would have been full at the old rate (which
// is also when a store drops it). A valid state is never more than 2^50µs
// ahead; the cap keeps any other in range.
func (b bucket) used(st *bucketState) span {
	if st.TAT < st.Latest {
		return span{}
	}
	ahead := min(st.TAT-st.Latest, maxDuration)
	if st.Count == b.count || st.Count <= 0 || st.Count > maxCount {
		return span{ahead, min(max(st.Frac, 0), b.k-1)}
	}
	old := newBucket(0, Rate{Count: st.Count, Period: duration(b.period)})
	frac := min(max(st.Frac, 0), old.k-1)
	charged := b.timesUpTo(old.tokensUp(span{ahead, frac}))
	// The old TAT in b's units, rounded down so as never to pass it.
	f, _ := mulDiv(frac, b.k, old.k)
	if until := (span{ahead, f}); less(until, charged) {
		return until
	}
	return charged
}

// usedAt returns the decision time for a decision at now on st, the later of
// now and the key's latest time, and how far the key's TAT is ahead of it.
func (b bucket) usedAt(st *bucketState, now time.Time) (eff int64, used span) {
	eff = micros(now)
	if st != nil {
		eff = max(eff, st.Latest)
		if u := b.used(st); eff-st.Latest < u.us || eff-st.Latest == u.us && u.f > 0 {
			used = b.sub(u, span{eff - st.Latest, 0})
		}
	}
	return eff, used
}

// refund gives back n tokens charged at time at; see TokenBucket.Refund. It
// returns nil when nothing comes back.
func (b bucket) refund(st *bucketState, now, at time.Time, n int64) *bucketState {
	if st == nil {
		return nil
	}
	eff, used := b.usedAt(st, now)
	if used == (span{}) {
		return nil // a full bucket: nothing counts, nothing to give back
	}
	a := micros(at)
	back := b.times(n)
	if st.Count != b.count && st.Count > 0 && st.Count <= maxCount {
		// The state was written at another rate count, whose intervals
		// stand for what was charged: give back no more than n of those
		// either, rounded down to the microsecond. Converting the state to
		// this rate rounds what it used up to a whole request, at the time
		// it was last written, so a state written later rounds
		// differently: one interval less covers that.
		old := newBucket(0, Rate{Count: st.Count, Period: duration(b.period)})
		if o := (span{old.times(n).us, 0}); less(o, back) {
			back = o
		}
		back = b.sub(back, b.times(1))
	}
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
func (b bucket) step(st *bucketState, now time.Time, cost, slack int64) (_ *bucketState, _ Result, delay time.Duration) {
	t := micros(now)
	eff, used := b.usedAt(st, now) // used: the time until the key is full again, from eff
	gap := eff - t                 // the caller's clock behind the key's latest time
	capacity := b.times(b.burst)

	res := Result{Limit: b.burst, At: time.UnixMicro(eff)}
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
	if cost <= 0 || !res.Allowed && cost == 1 {
		// An inspection changes nothing, and neither does a denial of cost
		// 1 (see Algorithm.Decide).
		return st, res, delay
	}
	if st == nil {
		st = &bucketState{}
	}
	st.TAT, st.Frac, st.Latest, st.Count = eff+used.us, used.f, eff, b.count
	return st, res, delay
}

// checkBucket checks a burst or capacity against a valid rate whose period
// is p µs: the count at most 2^50, and a full bucket refilled within 2^50µs,
// burst × period / count, compared without forming the product.
func checkBucket(burst int64, what string, rate Rate, p int64) error {
	if err := checkCount(what, burst); err != nil {
		return err
	}
	hi, lo := bits.Mul64(uint64(burst), uint64(p))
	limHi, limLo := bits.Mul64(uint64(maxDuration), uint64(rate.Count))
	if hi > limHi || hi == limHi && lo > limLo {
		return fmt.Errorf("%w: %s %d at %v refills in %d × %v / %d, above 2^50µs", ErrOutOfRange, what, burst, rate, burst, rate.Period, rate.Count)
	}
	return nil
}
