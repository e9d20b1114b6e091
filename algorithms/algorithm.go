package algorithms

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// Algorithm is one rate-limiting algorithm together with its parameters.
//
// The implementations are this package's FixedWindow, SlidingLog,
// CompactLog, SlidingWindow, TokenBucket and GCRA, one per Kind. Their values are small
// and comparable, so a limiter can hold one by value.
//
// The interface is sealed: only this package's types implement it. Every
// store must run every algorithm exactly, and the Redis store runs each one
// as a Lua step kept bit-identical to its Go step by a differential test;
// an algorithm defined elsewhere would work on one store and fail on another
// at run time. A new algorithm is added here, with its Lua step, and every
// store, tool and test then picks it up from the registry (see Kinds).
type Algorithm interface {
	// Kind is the algorithm's entry in the registry; Kind().Name() is its
	// stable identifier, such as "fixed_window".
	Kind() *Kind

	// String describes the algorithm and its parameters, such as
	// "gcra 10/1s burst 20".
	String() string

	// Validate reports whether the parameters are usable. The error wraps
	// one of this package's sentinel errors.
	Validate() error

	// name is Kind().Name().
	name() string

	// params returns the parameters in the form every algorithm shares;
	// Kind().New(params()) returns the same algorithm.
	params() Params

	// quota is the most cost an idle key admits at once (maxCost), and the
	// time an idle key takes to get it back in full: the window, or the
	// time the rate takes to refill the capacity or burst.
	quota() algobridge.Quota

	// scope is what, beside the name, tells apart the state this algorithm
	// value reads and writes: its window or period. Values with the same
	// name and scope share a key's state, so changing only a limit, burst
	// or capacity keeps what a key has used; values whose windows or
	// periods differ never share state.
	scope() algobridge.Scope

	// maxCost is the largest cost a single request can have: the cost an
	// idle key admits at once. A larger request could never be admitted.
	maxCost() int64

	// decide is the pure decision step for one key.
	//
	// state is what the previous step returned, or nil for a key with no
	// state. now is the decision time; it is used at microsecond resolution.
	// cost is the request's weight; a cost of 0 inspects the key without
	// consuming: the Result says whether a request of cost 1 would be
	// admitted, and Remaining is what is available now. A negative cost -n
	// inspects the same way for a request of cost n: Allowed and RetryAfter
	// are what a request of cost n would get, and nothing changes.
	//
	// Time never runs backwards for a key: the state remembers the latest
	// time a request was admitted at, or denied at with a cost above 1, and
	// a decision whose now is earlier is made at that latest time instead
	// (Result.At). A stale or skewed clock thus gets exactly the answer it
	// would have got with the clock held at its latest reading: the same
	// admission and Remaining, with RetryAfter and ResetAfter still counted
	// from now, so they include the difference. A denial of cost 1 is not
	// remembered, which spares a write on a busy key: every request with an
	// earlier time is denied with the same waits either way, only its At may
	// be earlier than the held clock's.
	//
	// A request of cost > 0 changes the state: an admission records its
	// cost, and the sliding log and sliding window counter drop what has
	// expired. An inspection changes nothing, but for a token bucket or
	// GCRA state written under another rate count, which any decision
	// converts (see "Changing limits"): it then returns a new state and
	// leaves the one it was given as it was (keeper tells when). Decide may
	// reuse state's memory for a request: the caller must keep the
	// returned state and drop the one it passed in. A nil state and any
	// state whose ResetAfter has passed are the same. State written under
	// other parameters of the same Name and Scope is read as what it
	// records (see each algorithm's doc) and never yields a result out of
	// range.
	//
	// The parameters must be valid, cost must be in [-MaxCost(), MaxCost()] and now
	// within [the Unix epoch, MaxTime] (see CheckDecision); Decide does not
	// check them on the hot path. A state of another algorithm's type is a
	// store's bug: Decide panics rather than treat it as no state.
	decide(state keyState, now time.Time, cost int64) (keyState, Result)

	// refund gives back n units of the cost that a request admitted at time
	// at was charged, at time now. It returns the state to keep and whether
	// anything came back; when nothing did, the state is state itself,
	// unchanged. at is the admission's Result.At: the time the request
	// counts at, which for a booking is its turn.
	//
	// A refund never lets more through than if the refunded units had never
	// been charged. What comes back depends on what the key did since, as
	// each algorithm's doc says: exactly n when the refund comes at once,
	// at the admission's own time with nothing charged in between; later,
	// possibly less, never more. Each admission must be refunded at
	// most once, by at most its cost, and not after its state was reset: a
	// key's state cannot tell one request from another (see "Refunds" in
	// the package doc).
	//
	// The inputs must pass CheckRefund; Refund does not check them.
	refund(state keyState, now, at time.Time, n int64) (keyState, bool)

	sealed()
}

// reserver is an algorithm that can book a request ahead: TokenBucket and
// GCRA, whose state is the time the key is full again, so a booking is that
// time moved on, whatever other requests do meanwhile.
//
// reserve charges cost at once and reports Allowed true when the request's
// turn comes within maxWait, with delay the wait until then (0 when it may
// go now); the request must wait delay before acting. When its turn is
// further away, nothing is charged, Allowed is false and RetryAfter is the
// wait until that turn, as for every denial: the shortest wait after which
// the same request would be admitted at once. A booking is a debt on
// the key: Remaining is 0 and later requests wait behind it, so bookings
// are served in the order they were made. maxWait must be in [0, 2^50µs]
// (CheckMaxWait); with 0, Reserve decides as Decide does.
type reserver interface {
	Algorithm
	reserve(state keyState, now time.Time, cost int64, maxWait time.Duration) (keyState, Result, time.Duration)
}

// CheckMaxWait reports whether maxWait is a wait Reserve accepts: a whole
// number of microseconds in [0, 2^50µs].
func checkMaxWait(maxWait time.Duration) error {
	if maxWait == 0 {
		return nil
	}
	_, err := durationMicros(ErrInvalidWindow, "maximum wait", maxWait)
	return err
}

// State is an algorithm's per-key state: *fixedWindowState,
// *slidingLogState, *compactLogState, *slidingWindowState, *tokenBucketState
// or *gcraState.
// Stores keep it opaque.
type keyState = any

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
	// is later (see Algorithm's decide); for FixedWindow, which keeps its
	// window rather than a time, the start of that window if it is later. A
	// Redis store deciding on the server's clock reports that clock. For a
	// booking (reserver) that must wait, At is its turn, rounded down to
	// the microsecond: the time the request counts at. RetryAfter and
	// ResetAfter count from the decision's now, not from At. A refund takes
	// At to find what the request was charged (Algorithm's refund).
	At time.Time

	// charge is what an admission charged (see Charged).
	charge charge
}

// charge is the algorithm an admission was decided under, as its kind and
// parameters (which allocate nothing to keep), and the cost it charged; the
// zero charge stands for nothing charged.
type charge struct {
	kind   *Kind
	params Params
	cost   int64
}

// Charged reports what an admission charged: the algorithm it was decided
// under, with its parameters (its kind and scope name the state charged,
// and its limit the quota), and its cost. A refund gives back into exactly
// that state, whatever limit the key has since (see Algorithm's refund and
// ratewise's Limiter.Refund). For a denial and an inspection, which charged
// nothing, and any Result whose Allowed is false, it returns nil and 0.
func (r Result) Charged() (Algorithm, int64) {
	if r.charge.kind == nil || !r.Allowed {
		return nil, 0
	}
	return r.charge.kind.build(r.charge.params), r.charge.cost
}

// markCharged returns res marked as the admission of a request of cost
// under alg, as decide and reserve mark the admissions they make (see
// Result.Charged). A store that decides outside Go, as the Redis store's Lua
// steps do, marks the admissions it reads back with it, so that its Results
// are the ones decide returns. A denial, a cost below 1 or an alg that is
// not one of this package's types leaves res unchanged.
func markCharged(res Result, alg Algorithm, cost int64) Result {
	if checkKind(alg) == nil {
		res.charged(alg.Kind(), alg.params(), cost)
	}
	return res
}

// charged marks r as the admission of cost under kind's algorithm with
// params, if it is one.
func (r *Result) charged(kind *Kind, params Params, cost int64) {
	if r.Allowed && cost > 0 {
		r.charge = charge{kind: kind, params: params, cost: cost}
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
	return strconv.FormatInt(r.Count, 10) + "/" + algobridge.CompactDuration(r.Period)
}

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

// timeFor returns how long n events take at rate r: n × Period / Count,
// rounded down to the microsecond. For example, PerMinute(10).timeFor(3)
// is 18s. r must be valid and n >= 0; a result above the largest
// time.Duration is capped there.
func (r Rate) timeFor(n int64) time.Duration {
	hi, lo := bits.Mul64(uint64(n), uint64(r.Period/time.Microsecond))
	if hi >= uint64(r.Count) {
		return time.Duration(math.MaxInt64)
	}
	us, _ := bits.Div64(hi, lo, uint64(r.Count))
	if us > math.MaxInt64/uint64(time.Microsecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(us) * time.Microsecond
}

// stateAs returns state as the algorithm's own state type S, or the zero S
// for no state. A state of any other type means a store handed one
// algorithm's state to another, which would silently admit as if the key
// were idle; that is a bug in the store, so it panics. It takes the name,
// not the algorithm, so that the hot path boxes nothing.
func stateAs[S comparable](name string, state keyState) S {
	st, ok := state.(S)
	if !ok && state != nil {
		panic(fmt.Sprintf("algorithms: %s given a state of type %T: a store mixed up the state of two algorithms", name, state))
	}
	return st
}
