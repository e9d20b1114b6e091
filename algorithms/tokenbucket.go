package algorithms

import (
	"fmt"
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// TokenBucket is the token bucket: a bucket holds up to Capacity tokens and
// refills continuously at Refill; a request of cost n takes n tokens.
//
// Semantics: an idle key has a full bucket. Tokens accrue continuously,
// fractions included (5 per second gives half a token after 100ms), up to
// Capacity. A request of cost n is admitted when at least n whole tokens are
// there. Remaining is the whole tokens left.
//
// Accuracy: exact, with integer arithmetic, for every rate from one per 2^50
// microseconds to 2^50 per microsecond: no refill is ever lost to rounding,
// so rates such as 3 per second, 100,000 per day or 10,000 per 30 days never
// drift. At most Capacity + Refill×d is admitted over any span d. TokenBucket
// and GCRA with the same rate and Capacity == Burst admit exactly the same
// requests with the same results: a bucket's level is the same fact as
// GCRA's theoretical arrival time, the moment the bucket is full again.
//
// Cost: that moment, the latest decision time and the rate count per key
// (O(1) memory); O(1) work per decision.
//
// A changed limit keeps the tokens taken (see "Changing limits" in the
// package doc): a key that took 50 of a Capacity of 100 has 950 left when
// the Capacity is raised to 1,000, and when it is lowered to 10 has
// Remaining 0 and admits one request once 41 tokens have refilled. A
// changed Refill.Count (the period is the scope) converts the state at the
// first decision under the new rate, an inspection included: the tokens
// taken then are kept, exactly, and refill at the new rate. A now earlier
// than the latest time the key was decided at is decided at that latest
// time (see Algorithm's decide).
type TokenBucket struct {
	Capacity int64
	Refill   Rate
}

// tokenBucketState is the time TAT + Frac/k µs since the Unix epoch at which
// the bucket is full again, where k is Refill.Count in lowest terms with
// Refill.Period; the latest time, in µs, a request was admitted at or denied
// at with a cost above 1; the Refill.Count it was written under; and, after
// that count changed, until no refund of an earlier charge could give
// anything back, the time of the change (Since), the time, in µs rounded
// up, at which the bucket would have been full again as a change left it
// holding tokens (Booked), and the count it left then (BookedCount, 0 for
// two or more), which bound refunds (see Refund); all 0 otherwise. At time
// t the bucket holds
// Capacity - (TAT - t)/T tokens, T being the time one token takes to
// refill.
type tokenBucketState bucketState

// name returns "token_bucket".
func (TokenBucket) name() string { return tokenBucketKind.name }

// Kind returns the registry's "token_bucket".
func (TokenBucket) Kind() *Kind { return tokenBucketKind }

// params returns the parameters in their shared form.
func (a TokenBucket) params() Params {
	return Params{Limit: a.Refill.Count, Window: a.Refill.Period, Burst: a.Capacity}
}

// quota returns the capacity and the time an empty bucket takes to refill.
func (a TokenBucket) quota() algobridge.Quota {
	return algobridge.Quota{Limit: a.Capacity, Window: a.Refill.timeFor(a.Capacity)}
}

// String describes the algorithm, such as "token_bucket 10/1s burst 20".
func (a TokenBucket) String() string { return describe(a) }

func (TokenBucket) sealed() {}

// scope returns the refill period.
func (a TokenBucket) scope() algobridge.Scope { return algobridge.Scope{Window: a.Refill.Period} }

// maxCost returns Capacity.
func (a TokenBucket) maxCost() int64 { return a.Capacity }

// Validate checks Capacity in [1, 2^50], a valid Refill (Count in [1, 2^50],
// Period a whole number of microseconds in [1µs, 2^50µs]), and that an empty
// bucket refills within 2^50µs (about 35 years).
func (a TokenBucket) Validate() error {
	if a.Capacity <= 0 {
		return fmt.Errorf("%w, got capacity %d", ErrInvalidLimit, a.Capacity)
	}
	p, err := a.Refill.validate()
	if err != nil {
		return err
	}
	return checkBucket(a.Capacity, "capacity", a.Refill, p)
}

// decide runs one token-bucket step; see Algorithm's decide.
func (a TokenBucket) decide(state keyState, now time.Time, cost int64) (keyState, Result) {
	st, res, _ := newBucket(a.Capacity, a.Refill).step((*bucketState)(stateAs[*tokenBucketState](a.name(), state)), now, cost, 0)
	res.charged(tokenBucketKind, a.params(), cost)
	if st == nil {
		return nil, res
	}
	return (*tokenBucketState)(st), res
}

// reserve books a request of cost for the earliest time the TokenBucket admits it,
// if that is at most maxWait away; see reserver.
func (a TokenBucket) reserve(state keyState, now time.Time, cost int64, maxWait time.Duration) (keyState, Result, time.Duration) {
	st, res, delay := newBucket(a.Capacity, a.Refill).step((*bucketState)(stateAs[*tokenBucketState](a.name(), state)), now, cost, int64(maxWait/time.Microsecond))
	res.charged(tokenBucketKind, a.params(), cost)
	if st == nil {
		return nil, res, delay
	}
	return (*tokenBucketState)(st), res, delay
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
func (a TokenBucket) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := newBucket(a.Capacity, a.Refill).refund((*bucketState)(stateAs[*tokenBucketState](a.name(), state)), now, at, n)
	if st == nil {
		return state, false
	}
	return (*tokenBucketState)(st), true
}
