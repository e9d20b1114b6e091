package algorithms

import (
	"fmt"
	"time"
)

// Algorithm is one rate-limiting algorithm together with its parameters.
//
// The implementations in this package are FixedWindow, SlidingLog,
// SlidingWindow, TokenBucket and GCRA. Their values are small and comparable,
// so a limiter can hold one by value.
type Algorithm interface {
	// Name is the algorithm's stable identifier, such as "fixed_window".
	// Stores use it to separate the state of different algorithms under one
	// key and to pick the matching script.
	Name() string

	// Validate reports whether the parameters are usable. The error wraps
	// one of this package's sentinel errors.
	Validate() error

	// MaxCost is the largest cost a single request can have: the cost an
	// idle key admits at once. A larger request could never be admitted.
	MaxCost() int64

	// Decide is the pure decision step for one key.
	//
	// state is what the previous step returned, or nil for a key with no
	// state. now is the decision time; it is used at microsecond resolution.
	// cost is the request's weight; a cost of 0 inspects the key without
	// consuming: the Result says whether a request of cost 1 would be
	// admitted, and Remaining is what is available now.
	//
	// Only an admitted request of cost > 0 changes the state, except that
	// the sliding log and sliding window counter drop expired records on
	// every request of cost > 0, as ZREMRANGEBYSCORE does in the notes'
	// script; an inspection or a denial leaves everything else as it was,
	// which matters when a clock later steps back. Decide may reuse state's
	// memory: the caller must keep the returned state and drop the one it
	// passed in. A nil state and any state whose ResetAfter has passed are
	// the same; Decide returns nil for a key that holds nothing. The
	// parameters must be valid (see Validate) and cost must be in
	// [0, MaxCost()]; Decide does not check either on the hot path.
	Decide(state State, now time.Time, cost int64) (State, Result)

	// Args are the parameters in the integer form that stores pass to
	// their scripts: counts as they are, durations in microseconds. The
	// order is documented on each algorithm.
	Args() []int64
}

// State is an algorithm's per-key state: *FixedWindowState,
// *SlidingLogState, *SlidingWindowState, *TokenBucketState or *GCRAState.
// Stores keep it opaque. A state of the wrong type is treated as no state.
type State any

// Result is the outcome of one decision. The HTTP layer builds 429 responses,
// Retry-After and RateLimit headers from it, so every field is exact.
//
// For example, with a token bucket of capacity 10 refilled at 10 per second,
// a request of cost 1 on an idle key returns Allowed true, Limit 10,
// Remaining 9, RetryAfter 0 and ResetAfter 100ms.
type Result struct {
	// Allowed reports whether the request was admitted. Being limited is a
	// value here, never an error.
	Allowed bool

	// Limit is the most cost an idle key admits at once: the limit,
	// capacity or burst the algorithm was configured with.
	Limit int64

	// Remaining is the cost still available right now, after this request
	// if it was admitted. It is never negative. If a limiter allows 10 per
	// minute and 6 were used, Remaining is 4.
	Remaining int64

	// RetryAfter is 0 when the request was admitted. When it was denied, it
	// is the shortest wait after which the same request would be admitted
	// if nothing else arrived in between.
	RetryAfter time.Duration

	// ResetAfter is the time until the key is back at full capacity, which
	// is also how long its state can still affect a decision. It is 0 for a
	// key at full capacity.
	ResetAfter time.Duration
}

// Rate is a number of events per period, such as 10 per second.
type Rate struct {
	Count  int64
	Period time.Duration
}

// PerSecond returns a rate of n per second.
func PerSecond(n int64) Rate { return Rate{Count: n, Period: time.Second} }

// PerMinute returns a rate of n per minute.
func PerMinute(n int64) Rate { return Rate{Count: n, Period: time.Minute} }

// PerHour returns a rate of n per hour.
func PerHour(n int64) Rate { return Rate{Count: n, Period: time.Hour} }

// String returns the rate as "count/period", for example "10/1s".
func (r Rate) String() string { return fmt.Sprintf("%d/%s", r.Count, r.Period) }

// IsZero reports whether r is the zero Rate.
func (r Rate) IsZero() bool { return r == Rate{} }

// validate checks the rate and returns the period in microseconds.
func (r Rate) validate() (periodMicros int64, err error) {
	if r.Count <= 0 {
		return 0, fmt.Errorf("%w, got rate count %d", ErrInvalidLimit, r.Count)
	}
	if err := checkCount("rate count", r.Count); err != nil {
		return 0, err
	}
	return durationMicros(ErrInvalidPeriod, "period", r.Period)
}
