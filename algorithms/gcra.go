package algorithms

import (
	"fmt"
	"time"
)

// GCRA is the generic cell rate algorithm, the leaky bucket as a meter, as
// redis-cell's CL.THROTTLE runs it: each key keeps only its theoretical
// arrival time (TAT), the time at which its bucket would be empty.
//
// Semantics: requests drain at Rate, one every Rate.Period/Rate.Count (the
// emission interval T), and up to Burst can arrive at once. A request of cost
// n at time t is admitted when max(TAT, t) + n×T - t <= Burst×T, and then sets
// TAT to max(TAT, t) + n×T. Burst is the whole capacity: Burst 1 admits one
// request per T with no burst. (redis-cell's max_burst is Burst-1.)
//
// Accuracy: exact. T need not be a whole microsecond: TAT is kept as whole
// microseconds plus a remainder in 1/Rate.Count of a microsecond, so rates
// such as 3 per second never drift. GCRA admits exactly what a TokenBucket
// with Capacity Burst and the same rate admits.
//
// Cost: one timestamp per key (O(1) memory); O(1) work per decision.
//
// Args: [Burst, Rate.Count, Rate.Period in µs].
type GCRA struct {
	Rate  Rate
	Burst int64
}

// GCRAState is the theoretical arrival time TAT + Frac/Rate.Count
// microseconds since the Unix epoch, with 0 <= Frac < Rate.Count.
type GCRAState struct {
	TAT  int64
	Frac int64
}

// Name returns "gcra".
func (GCRA) Name() string { return "gcra" }

// MaxCost returns Burst.
func (a GCRA) MaxCost() int64 { return a.Burst }

// Args returns [Burst, Rate.Count, Rate.Period in µs].
func (a GCRA) Args() []int64 {
	return []int64{a.Burst, a.Rate.Count, int64(a.Rate.Period / time.Microsecond)}
}

// Validate checks a valid Rate, Burst >= 1, and that Burst × Rate.Period in
// µs is at most 2^53.
func (a GCRA) Validate() error {
	p, err := a.Rate.validate()
	if err != nil {
		return err
	}
	if a.Burst < 1 {
		return fmt.Errorf("%w, got %d", ErrInvalidBurst, a.Burst)
	}
	return checkProduct("burst × period in µs", a.Burst, p)
}

// Decide runs one GCRA step; see Algorithm.Decide.
//
// Durations inside are "ticks" of 1/Rate.Count µs, in which the emission
// interval is exactly Rate.Period in µs.
func (a GCRA) Decide(state State, now time.Time, cost int64) (State, Result) {
	p := int64(a.Rate.Period / time.Microsecond) // T in ticks
	k := a.Rate.Count                            // ticks per µs
	capacity := a.Burst * p
	t := micros(now)
	tat, frac := t, int64(0)
	st, _ := state.(*GCRAState)
	if st != nil {
		// Normalise a remainder written under other parameters.
		tat, frac = st.TAT+floorDiv(st.Frac, k), floorMod(st.Frac, k)
	}

	// The wait until TAT is dus µs plus frac ticks, d ticks in all. It is
	// only far beyond capacity if the clock stepped back; then d is not
	// formed, since it could overflow.
	dus := tat - t
	if dus < 0 {
		dus, frac = 0, 0
	}
	beyond := dus > ceilDiv(capacity, k)
	var d int64
	if !beyond {
		d = dus*k + frac
	}

	res := Result{Limit: a.Burst}
	if need := max(cost, 1) * p; !beyond && d+need <= capacity {
		res.Allowed = true
		d += cost * p
		res.ResetAfter = duration(ceilDiv(d, k))
		if cost > 0 {
			if st == nil {
				st = &GCRAState{}
			}
			st.TAT, st.Frac = t+d/k, d%k
		}
	} else {
		res.RetryAfter = duration(dus + ceilDiv(frac+need-capacity, k))
		res.ResetAfter = duration(dus + ceilDiv(frac, k))
	}
	if !beyond {
		res.Remaining = max(0, (capacity-d)/p)
	}
	if st == nil {
		return nil, res
	}
	return st, res
}
