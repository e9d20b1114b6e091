package algorithms

import "fmt"

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
// time (see "Time that runs backwards" in the package doc).
type TokenBucket struct {
	Capacity int64
	Refill   Rate
}

// Kind returns the registry's "token_bucket".
func (TokenBucket) Kind() *Kind { return tokenBucketKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a TokenBucket) packed() packedParams { return pack(a.params()) }

func (a TokenBucket) params() Params {
	return Params{Limit: a.Refill.Count, Window: a.Refill.Period, Burst: a.Capacity}
}

// String describes the algorithm, such as "token_bucket 10/1s burst 20".
func (a TokenBucket) String() string { return describe(a) }

func (TokenBucket) sealed() {}

// Validate checks Capacity in [1, 2^50], a valid Refill (Count in [1, 2^50],
// Period a whole number of microseconds in [1µs, 2^50µs]), and that an empty
// bucket refills within 2^50µs (about 35 years).
func (a TokenBucket) Validate() error {
	if a.Capacity <= 0 {
		return fmt.Errorf("%w: capacity must be > 0, got %d", ErrInvalidAlgorithm, a.Capacity)
	}
	p, err := a.Refill.validate()
	if err != nil {
		return err
	}
	return checkBucket(a.Capacity, "capacity", a.Refill, p)
}
