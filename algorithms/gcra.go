package algorithms

import (
	"fmt"
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// GCRA is the generic cell rate algorithm, the leaky bucket as a meter, as
// redis-cell's CL.THROTTLE runs it: each key is described by its theoretical
// arrival time (TAT), the time at which its bucket would be empty.
//
// Semantics: requests drain at Rate, one every Rate.Period/Rate.Count (the
// emission interval T), and up to Burst can arrive at once. A request of cost
// n at time t is admitted when max(TAT, t) + n×T - t <= Burst×T, and then sets
// TAT to max(TAT, t) + n×T. Burst is the whole capacity: Burst 1 admits one
// request per T with no burst. (redis-cell's max_burst is Burst-1.)
//
// Accuracy: exact, with integer arithmetic, for every rate from one per 2^50
// microseconds to 2^50 per microsecond. T need not be a whole microsecond:
// TAT is kept as whole microseconds plus a fraction of one, so rates such as
// 3 per second or 10,000 per 30 days never drift. GCRA admits exactly what a
// TokenBucket with Capacity Burst and the same rate admits.
//
// Cost: TAT, the latest decision time and the rate count per key (O(1)
// memory); O(1) work per decision.
//
// A changed limit keeps what the key used, in tokens (see "Changing limits"
// in the package doc). Changing Burst keeps TAT. Changing Rate.Count (the
// period is the scope) converts TAT at the first decision under the new
// rate, an inspection included: the tokens used then are charged at the new
// rate, exactly, and refill at it. For example, with 1,000 per minute and a
// Burst of 20, all 20 used, and the rate lowered to 10 per minute at the
// same instant, the key is denied with Remaining 0, and admits one request
// 6s later. A now earlier than the latest time the key was decided at is
// decided at that latest time (see Algorithm's decide).
type GCRA struct {
	Rate  Rate
	Burst int64
}

// gcraState is the theoretical arrival time TAT + Frac/k µs since the Unix
// epoch, where k is Rate.Count in lowest terms with Rate.Period and 0 <= Frac
// < k; the latest time, in µs, a request was admitted at or denied at with a
// cost above 1; the Rate.Count it was written under; and, after that count
// changed, until no refund of an earlier charge could give anything back,
// the time of the change (Since), the time, in µs rounded up, at which the
// key would have been full again as a change left it holding tokens
// (Booked), and the count it left then (BookedCount, 0 for two or more),
// which bound refunds (see Refund); all 0 otherwise.
type gcraState bucketState

// name returns "gcra".
func (GCRA) name() string { return gcraKind.name }

// Kind returns the registry's "gcra".
func (GCRA) Kind() *Kind { return gcraKind }

// params returns the parameters in their shared form.
func (a GCRA) params() Params {
	return Params{Limit: a.Rate.Count, Window: a.Rate.Period, Burst: a.Burst}
}

// quota returns the burst and the time Burst requests take to drain.
func (a GCRA) quota() algobridge.Quota {
	return algobridge.Quota{Limit: a.Burst, Window: a.Rate.timeFor(a.Burst)}
}

// String describes the algorithm, such as "gcra 10/1s burst 20".
func (a GCRA) String() string { return describe(a) }

func (GCRA) sealed() {}

// scope returns the rate's period.
func (a GCRA) scope() algobridge.Scope { return algobridge.Scope{Window: a.Rate.Period} }

// maxCost returns Burst.
func (a GCRA) maxCost() int64 { return a.Burst }

// Validate checks a valid Rate (Count in [1, 2^50], Period a whole number of
// microseconds in [1µs, 2^50µs]), Burst in [1, 2^50], and that Burst
// requests drain within 2^50µs (about 35 years).
func (a GCRA) Validate() error {
	p, err := a.Rate.validate()
	if err != nil {
		return err
	}
	if a.Burst < 1 {
		return fmt.Errorf("%w, got %d", ErrInvalidBurst, a.Burst)
	}
	return checkBucket(a.Burst, "burst", a.Rate, p)
}

// decide runs one GCRA step; see Algorithm's decide.
func (a GCRA) decide(state keyState, now time.Time, cost int64) (keyState, Result) {
	st, res, _ := newBucket(a.Burst, a.Rate).step((*bucketState)(stateAs[*gcraState](a.name(), state)), now, cost, 0)
	res.charged(gcraKind, a.params(), cost)
	if st == nil {
		return nil, res
	}
	return (*gcraState)(st), res
}

// reserve books a request of cost for the earliest time the GCRA admits it,
// if that is at most maxWait away; see reserver.
func (a GCRA) reserve(state keyState, now time.Time, cost int64, maxWait time.Duration) (keyState, Result, time.Duration) {
	st, res, delay := newBucket(a.Burst, a.Rate).step((*bucketState)(stateAs[*gcraState](a.name(), state)), now, cost, int64(maxWait/time.Microsecond))
	res.charged(gcraKind, a.params(), cost)
	if st == nil {
		return nil, res, delay
	}
	return (*gcraState)(st), res, delay
}

// refund gives back up to n×T of the key's TAT, never past now: the tokens a
// request charged at time at took, less what has refilled since at and less
// any booking made after it, since the bucket could have been full in
// between, had the request never been made, and later bookings' turns are
// already set behind it. Refunded at once, an admission comes back in full
// (unless the key's rate count has changed more than once lately, below);
// a booking cancelled before its turn comes back in full when none was made
// after it. A key written under another rate count since the charge (see
// "Changing limits" in the package doc) gives nothing back, even once the
// rate count is back: what the charge took is not what the key counts now,
// nor is what has refilled since. A booking is known only by its turn,
// which may come after such a change, so when a key that held tokens has
// left this rate count (or two rate counts) since, a refund under it also
// gives nothing for an At a capacity or more before the time at which the
// key, as it was left, would have been full, until no refund of an earlier
// charge could give anything back: only a booking made before the change, a
// capacity lowered since, or a count left twice puts At there.
// See Algorithm's refund.
func (a GCRA) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := newBucket(a.Burst, a.Rate).refund((*bucketState)(stateAs[*gcraState](a.name(), state)), now, at, n)
	if st == nil {
		return state, false
	}
	return (*gcraState)(st), true
}
