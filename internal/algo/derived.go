package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// derive returns what the packed step of a, an algorithm that packs,
// derives from its parameters (see internal/algo.Derive): a bucket's rate
// in lowest terms and its emission interval, or nothing for a fixed window,
// whose step derives nothing costly.
func derive(a algorithms.Algorithm) Derived {
	var b bucket
	switch a := a.(type) {
	case algorithms.GCRA:
		b = newBucket(a.Burst, a.Rate)
	case algorithms.TokenBucket:
		b = newBucket(a.Capacity, a.Refill)
	default:
		return Derived{}
	}
	return Derived{bucket: b, capacity: b.times(b.burst)}
}

// stepPacked is stepPacked for a token bucket or GCRA, writing the
// Result into res.
func (d *Derived) stepPacked(
	w *Words,
	tag int64,
	now time.Time,
	cost int64,
	res *algorithms.Result,
) (Words, int64, bool) {
	if w == nil || tag == d.bucket.count {
		return d.stepWords(w, now, cost, res)
	}
	return d.bucket.stepConverted(*w, tag, now, cost, res)
}

// stepConverted is stepPacked on a state written under another rate count,
// through the whole step.
func (b bucket) stepConverted(
	w Words,
	tag int64,
	now time.Time,
	cost int64,
	res *algorithms.Result,
) (Words, int64, bool) {
	var st, spare bucketState
	unpackBucket(&st, w, tag)
	out, _ := b.stepInto(&st, &spare, now, cost, 0, res)
	if out == nil {
		return Words{}, 0, false
	}
	return b.packState(out)
}

// stepWords is stepPacked on no state, or on a packed one written under
// b's rate count, which is most decisions: such a state's TAT is whole and
// it marks no rate count change (packState), so the step converts nothing,
// keeps nothing of a change, and, without slack, books nothing. It is
// stepInto with those cases taken out, on the two words, and the packed
// test holds it to Decide then Pack.
func (d *Derived) stepWords(w *Words, now time.Time, cost int64, res *algorithms.Result) (Words, int64, bool) {
	b, capacity := &d.bucket, d.capacity
	t := micros(now)
	eff, used := t, span{}
	if w != nil {
		eff = max(t, w[1])
		if w[0] > eff {
			used.us = min(w[0]-eff, maxDuration)
		}
	}
	gap := eff - t
	*res = algorithms.Result{Limit: b.burst, At: time.UnixMicro(eff)}
	if after := b.add(used, b.times(cost)); !less(capacity, after) {
		res.Allowed = true
		used = after
	} else {
		res.RetryAfter = duration(b.sub(after, capacity).ceil() + gap)
	}
	if used != (span{}) {
		res.ResetAfter = duration(used.ceil() + gap)
	}
	if !less(capacity, used) {
		res.Remaining = b.tokens(b.sub(capacity, used))
	}
	switch {
	case !res.Allowed && cost == 1 && w != nil:
		return *w, b.count, true // a denial of cost 1 changes nothing (Decide)
	case !res.Allowed && cost == 1:
		return Words{}, 0, false // and leaves no state
	case used.f != 0 || eff < 0:
		// No packed form (packState): until it stops counting.
		return Words{max(eff+used.ceil(), 0)}, 0, false
	}
	return Words{eff + used.us, eff}, b.count, true
}
