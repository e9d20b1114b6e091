package algorithms

import (
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// derive returns what the packed step of a, an algorithm that packs,
// derives from its parameters (see internal/algo.Derive): a bucket's rate
// in lowest terms and its emission interval, or nothing for a fixed window,
// whose step derives nothing costly.
func derive(a Algorithm) algobridge.Derived {
	var b bucket
	switch a := a.(type) {
	case GCRA:
		b = newBucket(a.Burst, a.Rate)
	case TokenBucket:
		b = newBucket(a.Capacity, a.Refill)
	default:
		return algobridge.Derived{}
	}
	return algobridge.Derived{b.burst, b.k, b.p, b.q, b.r, b.count, b.period}
}

// decidePacked runs a's step, with d from derive(a), on the state w and
// tag pack (has true), or on none (has false), and returns the new state
// packed, with ok false when the step leaves no state or one without a
// packed form: see internal/algo.DecidePacked.
func decidePacked(a Algorithm, d *algobridge.Derived, w algobridge.Words, tag int64, has bool, now time.Time, cost int64) (algobridge.Words, int64, Result, bool) {
	switch a := a.(type) {
	case GCRA:
		return derivedBucket(d).decidePacked(gcraKind, a.params(), w, tag, has, now, cost)
	case TokenBucket:
		return derivedBucket(d).decidePacked(tokenBucketKind, a.params(), w, tag, has, now, cost)
	case FixedWindow:
		var st, spare fixedWindowState
		var in *fixedWindowState
		if has {
			st = fixedWindowState{Start: w[0] - int64(a.Window/time.Microsecond), Count: w[1]}
			in = &st
		}
		out, res := a.stepInto(in, &spare, now, cost)
		res.charged(fixedWindowKind, a.params(), cost)
		if out == nil || out.Start < 0 {
			return algobridge.Words{}, 0, res, false
		}
		return algobridge.Words{out.Start + int64(a.Window/time.Microsecond), out.Count}, 0, res, true
	}
	return algobridge.Words{}, 0, Result{}, false
}

func derivedBucket(d *algobridge.Derived) bucket {
	return bucket{burst: d[0], k: d[1], p: d[2], q: d[3], r: d[4], count: d[5], period: d[6]}
}

// decidePacked is decidePacked for a token bucket or GCRA of kind with
// params.
func (b bucket) decidePacked(kind *Kind, params Params, w algobridge.Words, tag int64, has bool, now time.Time, cost int64) (algobridge.Words, int64, Result, bool) {
	var st, spare bucketState
	var in *bucketState
	if has {
		unpackBucket(&st, w, tag)
		in = &st
	}
	out, res, _ := b.stepInto(in, &spare, now, cost, 0)
	res.charged(kind, params, cost)
	if out == nil {
		return algobridge.Words{}, 0, res, false
	}
	w, tag, ok := b.pack(out)
	return w, tag, res, ok
}
