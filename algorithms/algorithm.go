package algorithms

import (
	"fmt"
	"strconv"
	"time"
)

// Algorithm is one rate-limiting algorithm together with its parameters.
//
// The implementations are this package's FixedWindow, SlidingLog,
// CompactLog, SlidingWindow, TokenBucket, GCRA and CalendarWindow, one per
// Kind. Their values are small and comparable, so a limiter can hold one by
// value.
//
// The interface is sealed: only this package's types implement it. Every
// store must run every algorithm exactly, and the Redis store runs each one
// as a Lua step kept bit-identical to its Go step by a differential test;
// an algorithm defined elsewhere would work on one store and fail on another
// at run time. A new algorithm is added here, with its Lua step, and every
// store, tool and test then picks it up from the registry (see Kinds).
type Algorithm interface {
	// Kind is the algorithm's entry in the registry; Kind().String() is its
	// stable identifier, such as "fixed_window".
	Kind() *Kind

	// String describes the algorithm and its parameters, such as
	// "gcra 10/1s burst 20".
	String() string

	// Validate reports whether the parameters are usable. The error wraps
	// ErrInvalidAlgorithm and names the parameter.
	Validate() error

	// params returns the parameters in the form every algorithm shares;
	// Kind().New(params()) returns the same algorithm.
	params() Params

	// packed returns params() in a Result's charge (see packedParams).
	packed() packedParams

	// sealed keeps other packages' types out: only this package's types
	// are algorithms (see above).
	sealed()
}

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
	// if it was admitted: 0 <= Remaining <= Limit. If a limiter allows 10
	// per minute and 6 were used, Remaining is 4.
	Remaining int64

	// RetryAfter is 0 when the request was admitted. When it was denied, it
	// is the shortest wait after which the same request would be admitted
	// if nothing else arrived in between.
	RetryAfter time.Duration

	// ResetAfter is the time until the key is back at full capacity, which
	// is also how long its state can still affect a decision. It is 0 for a
	// key at full capacity.
	ResetAfter time.Duration

	// At is the time the decision was made at, to the microsecond: the
	// decision's now, or the latest time the key had already seen if that
	// is later (see "Time that runs backwards" in the package doc); for
	// FixedWindow, which keeps its window rather than a time, the start of
	// that window if it is later. A Redis store deciding on the server's
	// clock reports that clock. For a booking (the token bucket and GCRA)
	// that must wait, At is its turn, rounded down to the microsecond: the
	// time the request counts at. RetryAfter and ResetAfter count from the
	// decision's now, not from At. A refund takes At to find what the
	// request was charged (see "Refunds" in the package doc).
	At time.Time

	// charged is the algorithm an admission was decided under, and cost
	// what it charged (see Charged); nil and 0 for nothing charged.
	charge charge
}

// charge is the algorithm an admission was decided under, as its kind and
// parameters, and the cost it charged; the zero charge stands for nothing
// charged. It holds no Algorithm: a Result holding an interface made a
// memory-store decision 15-20% slower (bench's BenchmarkDecide).
type charge struct {
	kind   *Kind
	params packedParams
	cost   int64
}

// packedParams is Params in the four words the windowed and bucket
// algorithms need, so that a Result, which every decision copies, is no
// larger for the calendar window: its period is a code in window and its
// zone an index in subWindows (see calendarZone).
type packedParams struct {
	limit      int64
	window     time.Duration
	burst      int64
	subWindows int64
}

// pack returns p packed; every algorithm but the calendar window packs
// its Params as they are.
func pack(p Params) packedParams {
	return packedParams{limit: p.Limit, window: p.Window, burst: p.Burst, subWindows: p.SubWindows}
}

// unpack returns the Params that p packs for kind k.
func (p packedParams) unpack(k *Kind) Params {
	if k.calendar {
		return Params{Limit: p.limit, Period: calendarPeriods[p.window], Location: zoneAt(p.subWindows)}
	}
	return Params{Limit: p.limit, Window: p.window, Burst: p.burst, SubWindows: p.subWindows}
}

// Charged reports what an admission charged: the algorithm it was decided
// under, with its parameters (its kind and scope name the state charged,
// and its limit the quota), and its cost. A refund gives back into exactly
// that state, whatever limit the key has since (see "Refunds" in the package doc, and
// ratewise's Limiter.Refund). For a denial and an inspection, which charged
// nothing, and any Result whose Allowed is false, it returns nil and 0.
func (r Result) Charged() (Algorithm, int64) {
	if r.charge.kind == nil || !r.Allowed {
		return nil, 0
	}
	return r.charge.kind.build(r.charge.params.unpack(r.charge.kind)), r.charge.cost
}

// SetCharged marks r as the admission of a request of cost under alg,
// which Charged then reports, so that a refund (Limiter.Refund) gives back
// into exactly the state that was charged. A store returns its admissions
// marked: the memory store's steps mark theirs, and a store that decides
// elsewhere, as in Lua or SQL, marks what it reads back. On a denial
// (Allowed false), with a cost below 1 or a nil alg, it does nothing.
func (r *Result) SetCharged(alg Algorithm, cost int64) {
	if r.Allowed && cost > 0 && alg != nil {
		// Field by field: a copy of the whole charge, built on the stack,
		// would stall reading back what was just written there.
		r.charge.kind, r.charge.params, r.charge.cost = alg.Kind(), alg.packed(), cost
	}
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

// String returns the rate as "count/period" with the period in its largest
// whole unit, for example "10/1s", "100/1m", "1000000/24h" or "7/1500ms".
// ParseRate reads it back.
func (r Rate) String() string {
	return strconv.FormatInt(r.Count, 10) + "/" + compactDuration(r.Period)
}

// validate checks the rate and returns the period in microseconds.
func (r Rate) validate() (periodMicros int64, err error) {
	if r.Count <= 0 {
		return 0, fmt.Errorf("%w: a rate's count must be > 0, got %d", ErrInvalidAlgorithm, r.Count)
	}
	if err := checkCount("rate count", r.Count); err != nil {
		return 0, err
	}
	return durationMicros("period", r.Period)
}
