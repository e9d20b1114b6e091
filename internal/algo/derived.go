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
	return Derived{b.burst, b.k, b.p, b.q, b.r, b.count, b.period}
}

func derivedBucket(d *Derived) bucket {
	return bucket{burst: d[0], k: d[1], p: d[2], q: d[3], r: d[4], count: d[5], period: d[6]}
}

// stepPacked is stepPacked for a token bucket or GCRA, writing the
// Result into res.
func (b bucket) stepPacked(
	w *Words,
	tag int64,
	now time.Time,
	cost int64,
	res *algorithms.Result,
) (Words, int64, bool) {
	var st, spare bucketState
	var in *bucketState
	if w != nil {
		unpackBucket(&st, *w, tag)
		in = &st
	}
	out, _ := b.stepInto(in, &spare, now, cost, 0, res)
	if out == nil {
		return Words{}, 0, false
	}
	return b.packState(out)
}
