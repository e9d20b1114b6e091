package algorithms

import (
	"fmt"
	"time"
)

// TokenBucket is the token bucket: a bucket holds up to Capacity tokens and
// refills continuously at Refill; a request of cost n takes n tokens.
//
// Semantics: an idle key has a full bucket. Tokens accrue continuously,
// fractions included (5 per second gives half a token after 100ms), up to
// Capacity. A request of cost n is admitted when at least n whole tokens are
// there. Remaining is the whole tokens left.
//
// Accuracy: exact, with integer arithmetic: the fill level is kept in units of
// 1/(Refill.Period in µs) of a token, so no refill is ever lost to rounding.
// At most Capacity + Refill×d is admitted over any span d. TokenBucket and
// GCRA with the same rate and Capacity == Burst admit exactly the same
// requests; they differ in what they store and how they are explained.
//
// Cost: a fill level and a timestamp per key (O(1) memory); O(1) work per
// decision.
//
// Args: [Capacity, Refill.Count, Refill.Period in µs].
type TokenBucket struct {
	Capacity int64
	Refill   Rate
}

// TokenBucketState is the fill level at time Last (microseconds since the
// Unix epoch). Level counts 1/(Refill.Period in µs) of a token, so a full
// bucket is Capacity × Refill.Period in µs.
type TokenBucketState struct {
	Level int64
	Last  int64
}

// Name returns "token_bucket".
func (TokenBucket) Name() string { return "token_bucket" }

// MaxCost returns Capacity.
func (a TokenBucket) MaxCost() int64 { return a.Capacity }

// Args returns [Capacity, Refill.Count, Refill.Period in µs].
func (a TokenBucket) Args() []int64 {
	return []int64{a.Capacity, a.Refill.Count, int64(a.Refill.Period / time.Microsecond)}
}

// Validate checks Capacity > 0, a valid Refill, and that Capacity ×
// Refill.Period in µs is at most 2^53.
func (a TokenBucket) Validate() error {
	if a.Capacity <= 0 {
		return fmt.Errorf("%w, got capacity %d", ErrInvalidLimit, a.Capacity)
	}
	p, err := a.Refill.validate()
	if err != nil {
		return err
	}
	return checkProduct("capacity × period in µs", a.Capacity, p)
}

// Decide runs one token-bucket step; see Algorithm.Decide.
func (a TokenBucket) Decide(state State, now time.Time, cost int64) (State, Result) {
	p := int64(a.Refill.Period / time.Microsecond)
	k := a.Refill.Count // Level units gained per µs
	full := a.Capacity * p
	t := micros(now)
	level, last := full, t
	st, _ := state.(*TokenBucketState)
	if st != nil {
		level, last = st.Level, st.Last
	}
	if elapsed := t - last; elapsed > 0 {
		if deficit := full - level; elapsed >= ceilDiv(deficit, k) {
			level = full
		} else {
			level += elapsed * k
		}
		last = t
	}
	// last is later than now only when the clock stepped back; waits are
	// measured from the caller's now, so they include the gap.
	gap := last - t

	res := Result{Limit: a.Capacity}
	if need := max(cost, 1) * p; level >= need {
		res.Allowed = true
		if cost > 0 {
			level -= cost * p
			if st == nil {
				st = &TokenBucketState{}
			}
			st.Level, st.Last = level, last
		}
	} else {
		res.RetryAfter = duration(ceilDiv(need-level, k) + gap)
	}
	res.Remaining = level / p
	if level < full {
		res.ResetAfter = duration(ceilDiv(full-level, k) + gap)
	}
	if st == nil {
		return nil, res
	}
	return st, res
}
