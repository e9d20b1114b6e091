package algorithms

import "fmt"

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
// decided at that latest time (see "Time that runs backwards" in the package doc).
type GCRA struct {
	Rate  Rate
	Burst int64
}

// Kind returns the registry's "gcra".
func (GCRA) Kind() *Kind { return gcraKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a GCRA) packed() packedParams { return pack(a.params()) }

func (a GCRA) params() Params {
	return Params{Limit: a.Rate.Count, Window: a.Rate.Period, Burst: a.Burst}
}

// String describes the algorithm, such as "gcra 10/1s burst 20".
func (a GCRA) String() string { return describe(a) }

func (GCRA) sealed() {}

// Validate checks a valid Rate (Count in [1, 2^50], Period a whole number of
// microseconds in [1µs, 2^50µs]), Burst in [1, 2^50], and that Burst
// requests drain within 2^50µs (about 35 years).
func (a GCRA) Validate() error {
	p, err := a.Rate.validate()
	if err != nil {
		return err
	}
	if a.Burst < 1 {
		return fmt.Errorf("%w: burst must be >= 1, got %d", ErrInvalidAlgorithm, a.Burst)
	}
	return checkBucket(a.Burst, "burst", a.Rate, p)
}
