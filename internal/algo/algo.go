// Package algo holds the algorithms' steps: the decision step, refunds
// and bookings on a key's state, packing, and the checks a store makes.
// Package algorithms holds what users see of an algorithm (its
// parameters, Validate and String); the stores reach its step here, by
// one call: each function below picks the step by a type switch over
// algorithms' sealed types.
//
// A store keeps a key's state opaque, as a State it got from Decide,
// Refund or Reserve, and hands it back on the key's next call.
package algo

import (
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// State is an algorithm's per-key state, opaque to stores; nil is no
// state.
type State = any

// keyState is State, as the steps name it.
type keyState = State

// Words is a state packed into two integers (see Pack).
type Words [2]int64

// Derived is what a packed step derives from its algorithm's parameters:
// see Derive.
type Derived struct {
	bucket   bucket
	capacity span // bucket.times(bucket.burst)
}

// Scope is the part of an algorithm's parameters that gives its state its
// meaning: the window of FixedWindow, SlidingLog and SlidingWindow (with
// SubWindows for the latter), the rate's period for TokenBucket and GCRA,
// and the period and zone of CalendarWindow. The limit, capacity, burst and rate count are not part of it, so
// they can change while a key keeps what it used.
//
// Scope is comparable, so stores can key state by it without allocating.
//
// A calendar window's scope is its period and zone, kept in the same two
// words, so that every scope compares as fast: Window is the period's code,
// negative (see calendarScope), and SubWindows its zone's index in a table
// of zone names.
type Scope struct {
	Window     time.Duration
	SubWindows int64 // 0 unless the algorithm splits its window
}

// String returns the scope in a compact, exact form used in storage keys:
// the window in its largest whole unit, such as "1m", "90s", "1500ms" or
// "720h", followed by "/" and the sub-windows if there are any ("1m/6");
// a calendar window's period, and its zone unless it is UTC
// ("month@Europe/Berlin").
func (s Scope) String() string {
	var buf [32]byte
	return string(s.Append(buf[:0]))
}

// Append appends String's form of s to b: a store that builds a key in a
// buffer of its own names the scope without allocating.
func (s Scope) Append(b []byte) []byte {
	if s.Window < 0 {
		return appendCalendarScope(b, s)
	}
	b = appendCompactDuration(b, s.Window)
	if s.SubWindows != 0 {
		b = append(b, '/')
		b = strconv.AppendInt(b, s.SubWindows, 10)
	}
	return b
}

// compactDuration writes d in the largest of h, m, s, ms and us that
// divides it exactly; one unit per value, so two durations differ exactly
// when their strings do.
func compactDuration(d time.Duration) string {
	var buf [32]byte
	return string(appendCompactDuration(buf[:0], d))
}

func appendCompactDuration(b []byte, d time.Duration) []byte {
	for _, u := range [...]struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.d == 0 {
			return append(strconv.AppendInt(b, int64(d/u.d), 10), u.name...)
		}
	}
	return append(strconv.AppendInt(b, int64(d), 10), "ns"...)
}

// Quota is what a key admits: at most Limit cost at once, which an idle key
// gets back in full after Window. HTTP rate-limit headers report it.
type Quota struct {
	Limit  int64
	Window time.Duration
}

// Family is a class of algorithms whose decisions follow one model, so that
// tests and tools can state what to expect of every algorithm in it.
type Family int

const (
	// FamilyFixedWindow counts per window aligned to the Unix epoch: exact
	// per window, up to 2×Limit across a boundary.
	FamilyFixedWindow Family = iota + 1
	// FamilyLog decides as a sliding log whose timestamps are rounded down
	// to a quantum: to the microsecond for an algorithm without sub-windows,
	// the exact sliding log; to the sub-window for one with them, the
	// sliding window counter.
	FamilyLog
	// FamilyBucket refills continuously at a rate up to a burst: the token
	// bucket and GCRA, which decide identically.
	FamilyBucket
	// FamilyCalendar counts per period of the calendar (a day, week or
	// month in a time zone): the fixed window's model on periods of
	// unequal lengths.
	FamilyCalendar
)

// Decide is the pure decision step for one key.
//
// state is what the previous step returned, or nil for a key with no
// state. now is the decision time; it is used at microsecond resolution.
// cost is the request's weight; a cost of 0 inspects the key without
// consuming: the Result says whether a request of cost 1 would be
// admitted, and Remaining is what is available now. A negative cost -n
// inspects the same way for a request of cost n: Allowed and RetryAfter
// are what a request of cost n would get, and nothing changes.
//
// Time never runs backwards for a key: the state remembers the latest time
// a request was admitted at, or denied at with a cost above 1, and a
// decision whose now is earlier is made at that latest time instead
// (Result.At). A denial of cost 1 is not remembered, which spares a write
// on a busy key.
//
// A request of cost > 0 changes the state: an admission records its cost,
// and the sliding log and sliding window counter drop what has expired. An
// inspection changes nothing, but for a token bucket or GCRA state written
// under another rate count, which any decision converts: it then returns a
// new state and leaves the one it was given as it was (see Keeps). Decide
// may reuse state's memory for a request: the caller must keep the
// returned state and drop the one it passed in. A nil state and any state
// whose ResetAfter has passed are the same.
//
// The inputs must pass CheckDecision; Decide does not check them. A state
// of another algorithm's type is a store's bug: Decide panics rather than
// treat it as no state.
func Decide(a algorithms.Algorithm, state State, now time.Time, cost int64) (_ State, res algorithms.Result) {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		state, res = fixedWindow(a).decide(state, now, cost)
	case algorithms.SlidingLog:
		state, res = slidingLog(a).decide(state, now, cost)
	case algorithms.CompactLog:
		state, res = compactLog(a).decide(state, now, cost)
	case algorithms.SlidingWindow:
		state, res = slidingWindow(a).decide(state, now, cost)
	case algorithms.TokenBucket:
		state, res = newBucket(a.Capacity, a.Refill).decide(state, now, cost)
	case algorithms.GCRA:
		state, res = newBucket(a.Burst, a.Rate).decide(state, now, cost)
	case algorithms.CalendarWindow:
		state, res = calendarWindow(a).decide(state, now, cost)
	default:
		panic(notOurs(a))
	}
	res.SetCharged(a, cost)
	return state, res
}

// Refund gives back n units of the cost that a request admitted at time at
// was charged, at time now. It returns the state to keep and whether
// anything came back; when nothing did, the state is state itself,
// unchanged. at is the admission's Result.At.
//
// A refund never lets more through than if the refunded units had never
// been charged: exactly n when the refund comes at once, at the
// admission's own time with nothing charged in between; later, possibly
// less, never more. The inputs must pass CheckRefund.
func Refund(a algorithms.Algorithm, state State, now, at time.Time, n int64) (State, bool) {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).refund(state, now, at, n)
	case algorithms.SlidingLog:
		return slidingLog(a).refund(state, now, at, n)
	case algorithms.CompactLog:
		return compactLog(a).refund(state, now, at, n)
	case algorithms.SlidingWindow:
		return slidingWindow(a).refund(state, now, at, n)
	case algorithms.TokenBucket:
		return newBucket(a.Capacity, a.Refill).refund(state, now, at, n)
	case algorithms.GCRA:
		return newBucket(a.Burst, a.Rate).refund(state, now, at, n)
	case algorithms.CalendarWindow:
		return calendarWindow(a).refund(state, now, at, n)
	}
	panic(notOurs(a))
}

// Reserves reports whether a can book a request ahead (Reserve): the token
// bucket and GCRA.
func Reserves(a algorithms.Algorithm) bool {
	switch a.(type) {
	case algorithms.TokenBucket, algorithms.GCRA:
		return true
	}
	return false
}

// Reserve charges cost at once and reports Allowed true when the request's
// turn comes within maxWait, with delay the wait until then (0 when it may
// go now). When its turn is further away, nothing is charged, Allowed is
// false and RetryAfter is the wait until that turn. A booking is a debt on
// the key: Remaining is 0 and later requests wait behind it. maxWait must
// pass CheckMaxWait; with 0, Reserve decides as Decide does. a must be an
// algorithm that Reserves, unless maxWait is 0.
func Reserve(
	a algorithms.Algorithm,
	state State,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (State, algorithms.Result, time.Duration) {
	var b bucket
	switch a := a.(type) {
	case algorithms.TokenBucket:
		b = newBucket(a.Capacity, a.Refill)
	case algorithms.GCRA:
		b = newBucket(a.Burst, a.Rate)
	default:
		if maxWait != 0 {
			panic("algo: " + a.String() + " cannot book ahead")
		}
		state, res := Decide(a, state, now, cost)
		return state, res, 0
	}
	state, res, delay := b.reserve(state, now, cost, maxWait)
	res.SetCharged(a, cost)
	return state, res, delay
}

// Keeps reports whether Decide(state, now, cost) leaves state unchanged
// when cost is at most 0, or when cost is 1 and the request is denied: a
// log's denial drops expired records, and a bucket written under another
// rate count is converted by any decision. When it does, a denial's
// Result is what an inspection of cost 1 (a cost of -1) returns, so a
// store may decide either under a read lock, without writing. It must not
// be asked about another cost.
func Keeps(a algorithms.Algorithm, state State, now time.Time, cost int64) bool {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).keeps(state, now, cost)
	case algorithms.SlidingLog:
		return slidingLog(a).keeps(state, now, cost)
	case algorithms.CompactLog:
		return compactLog(a).keeps(state, now, cost)
	case algorithms.SlidingWindow:
		return slidingWindow(a).keeps(state, now, cost)
	case algorithms.TokenBucket:
		return newBucket(a.Capacity, a.Refill).keeps(state, now, cost)
	case algorithms.GCRA:
		return newBucket(a.Burst, a.Rate).keeps(state, now, cost)
	case algorithms.CalendarWindow:
		return calendarWindow(a).keeps(state, now, cost)
	}
	panic(notOurs(a))
}

// Packs reports whether a store can keep a's states inline, as two words
// and a tag (Pack), rather than as a pointer to a state: the fixed window,
// token bucket and GCRA. A store that does spends two words on a key
// instead of a pointer and an allocation; an algorithm that does not pack
// is kept boxed, exactly as well.
//
// The tag is what many keys' states share, such as the rate count a bucket
// was written under: a store keeps it once for a table of states and packs
// a state whose tag differs as it would one that does not pack. Algorithms
// of one kind and scope pack and unpack alike, so a store may use any of
// them for a table of that kind and scope.
func Packs(a algorithms.Algorithm) bool {
	switch a.(type) {
	case algorithms.FixedWindow, algorithms.TokenBucket, algorithms.GCRA:
		return true
	}
	return false
}

// Pack returns state, which a's step returned, as words and a tag, or ok
// false when it has no packed form (a bucket whose TAT has a fraction of a
// microsecond, or whose rate count changed lately, which refunds must still
// see). The first word is the microsecond, since the Unix epoch, from which
// the state no longer counts, at least 0: a decision or refund at that
// microsecond or later finds it as it would find no state, with the same
// Result. It is when the Result.ResetAfter of the decision that wrote it
// runs out, to the microsecond. With ok false, the first word, if above 0,
// is still when the state stops counting, which may then be later than
// that, and depend on a's limit (a bucket's capacity), not only its kind
// and scope: a store keeps the state until then. a must pack (Packs).
func Pack(a algorithms.Algorithm, state State) (w Words, tag int64, ok bool) {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).pack(state)
	case algorithms.TokenBucket:
		return newBucket(a.Capacity, a.Refill).pack(state)
	case algorithms.GCRA:
		return newBucket(a.Burst, a.Rate).pack(state)
	}
	panic(notPacked(a))
}

// Unpack returns the state that w and tag, from Pack, stand for. It reuses
// into's memory when into is a state of a's type, and allocates otherwise.
func Unpack(a algorithms.Algorithm, w Words, tag int64, into State) State {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).unpack(w, tag, into)
	case algorithms.TokenBucket, algorithms.GCRA:
		return bucket{}.unpack(w, tag, into)
	}
	panic(notPacked(a))
}

// Clone returns a copy of state, which shares no memory with it, for an
// algorithm that packs (Packs): a state a store keeps beside the key's own,
// such as a lease's mark (store.Store.Lease), which Decide must not reuse.
func Clone(a algorithms.Algorithm, state State) State {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).clone(state)
	case algorithms.TokenBucket, algorithms.GCRA:
		return bucket{}.clone(state)
	}
	panic(notPacked(a))
}

// Inspect returns the Result Decide returns for the state w and tag stand
// for, at now, with a cost <= 0 (a cost above 0 is taken as its negative):
// an inspection, which needs no state of its own; and whether that
// inspection leaves the state as it is (Keeps), as it does unless the state
// was written under another rate count. It allocates nothing, so that
// stores can inspect a packed state under a read lock without sharing a
// scratch state; one that does not keep the state must be decided under
// the write lock, and written.
func Inspect(
	a algorithms.Algorithm,
	w Words,
	tag int64,
	now time.Time,
	cost int64,
) (res algorithms.Result, keeps bool) {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return fixedWindow(a).inspect(w, tag, now, cost)
	case algorithms.TokenBucket:
		return newBucket(a.Capacity, a.Refill).inspect(w, tag, now, cost)
	case algorithms.GCRA:
		return newBucket(a.Burst, a.Rate).inspect(w, tag, now, cost)
	}
	panic(notPacked(a))
}

// Derive returns what DecidePacked needs of a, an algorithm that packs
// (Packs), and would otherwise derive from its parameters on every call,
// such as a bucket's rate in lowest terms: a store keeps it beside a, for
// the decisions a makes.
func Derive(a algorithms.Algorithm) Derived { return derive(a) }

// DecidePacked is Decide, then Pack, on the state that *w and tag stand
// for (Pack), or on no state when w is nil, without unpacking it into a
// State of its own: it allocates nothing. d is Derive(a), and cost is at
// least 1. ok is false when the decision leaves no state, or one that has
// no packed form; the store then decides with Decide instead, on the same
// input, with the same Result, which it writes into res. a must pack
// (Packs).
func DecidePacked(
	a algorithms.Algorithm,
	d *Derived,
	w *Words,
	tag int64,
	now time.Time,
	cost int64,
	res *algorithms.Result,
) (_ Words, _ int64, ok bool) {
	switch alg := a.(type) {
	case algorithms.GCRA, algorithms.TokenBucket:
		nw, ntag, ok := d.stepPacked(w, tag, now, cost, res)
		res.SetCharged(a, cost)
		return nw, ntag, ok
	case algorithms.FixedWindow:
		var st, spare fixedWindowState
		var in *fixedWindowState
		if w != nil {
			st = fixedWindowState{Start: w[0] - int64(alg.Window/time.Microsecond), Count: w[1]}
			in = &st
		}
		out := fixedWindow(alg).stepInto(in, &spare, now, cost, res)
		res.SetCharged(a, cost)
		if out == nil || out.Start < 0 {
			return Words{}, 0, false
		}
		return Words{out.Start + int64(alg.Window/time.Microsecond), out.Count}, 0, true
	}
	*res = algorithms.Result{}
	return Words{}, 0, false
}

// ScopeOf is what, beside the kind's name, tells apart the state a reads
// and writes: its window or period. Values with the same name and scope
// share a key's state.
func ScopeOf(a algorithms.Algorithm) Scope {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return Scope{Window: a.Window}
	case algorithms.SlidingLog:
		return Scope{Window: a.Window}
	case algorithms.CompactLog:
		return Scope{Window: a.Window}
	case algorithms.SlidingWindow:
		return Scope{Window: a.Window, SubWindows: a.SubWindows}
	case algorithms.TokenBucket:
		return Scope{Window: a.Refill.Period}
	case algorithms.GCRA:
		return Scope{Window: a.Rate.Period}
	case algorithms.CalendarWindow:
		return calendarScope(a)
	}
	panic(notOurs(a))
}

// QuotaOf is the most cost an idle key admits at once, and the time an idle
// key takes to get it back in full.
func QuotaOf(a algorithms.Algorithm) Quota {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return Quota{Limit: a.Limit, Window: a.Window}
	case algorithms.SlidingLog:
		return Quota{Limit: a.Limit, Window: a.Window}
	case algorithms.CompactLog:
		return Quota{Limit: a.Limit, Window: a.Window}
	case algorithms.SlidingWindow:
		return Quota{Limit: a.Limit, Window: a.Window}
	case algorithms.TokenBucket:
		return Quota{Limit: a.Capacity, Window: timeFor(a.Refill, a.Capacity)}
	case algorithms.GCRA:
		return Quota{Limit: a.Burst, Window: timeFor(a.Rate, a.Burst)}
	case algorithms.CalendarWindow:
		return Quota{Limit: a.Limit, Window: longestPeriod[a.Period]}
	}
	panic(notOurs(a))
}

// MaxCost is the largest cost a single request can have: the cost an idle
// key admits at once.
func MaxCost(a algorithms.Algorithm) int64 {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return a.Limit
	case algorithms.SlidingLog:
		return a.Limit
	case algorithms.CompactLog:
		return a.Limit
	case algorithms.SlidingWindow:
		return a.Limit
	case algorithms.TokenBucket:
		return a.Capacity
	case algorithms.GCRA:
		return a.Burst
	case algorithms.CalendarWindow:
		return a.Limit
	}
	panic(notOurs(a))
}

// ParamsOf returns a's parameters in the form every algorithm shares;
// a.Kind().New(ParamsOf(a)) returns the same algorithm.
func ParamsOf(a algorithms.Algorithm) algorithms.Params {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		return algorithms.Params{Limit: a.Limit, Window: a.Window}
	case algorithms.SlidingLog:
		return algorithms.Params{Limit: a.Limit, Window: a.Window}
	case algorithms.CompactLog:
		return algorithms.Params{Limit: a.Limit, Window: a.Window}
	case algorithms.SlidingWindow:
		return algorithms.Params{Limit: a.Limit, Window: a.Window, SubWindows: a.SubWindows}
	case algorithms.TokenBucket:
		return algorithms.Params{Limit: a.Refill.Count, Window: a.Refill.Period, Burst: a.Capacity}
	case algorithms.GCRA:
		return algorithms.Params{Limit: a.Rate.Count, Window: a.Rate.Period, Burst: a.Burst}
	case algorithms.CalendarWindow:
		return algorithms.Params{Limit: a.Limit, Period: a.Period, Location: a.Location}
	}
	panic(notOurs(a))
}

// ParamsString is a's parameters as its String writes them, without the
// kind: "10/1s burst 20", "1000/month in Europe/Berlin".
func ParamsString(a algorithms.Algorithm) string {
	return strings.TrimPrefix(a.String(), a.Kind().String()+" ")
}

// WithQuotaLimit returns a copy of a whose quota's limit (the limit,
// capacity or burst) is n, with every other parameter unchanged, so it
// keeps a's scope and the state a store holds for it. The copy is not
// validated, so that tests can build invalid values.
func WithQuotaLimit(a algorithms.Algorithm, n int64) algorithms.Algorithm {
	switch a := a.(type) {
	case algorithms.FixedWindow:
		a.Limit = n
		return a
	case algorithms.SlidingLog:
		a.Limit = n
		return a
	case algorithms.CompactLog:
		a.Limit = n
		return a
	case algorithms.SlidingWindow:
		a.Limit = n
		return a
	case algorithms.TokenBucket:
		a.Capacity = n
		return a
	case algorithms.GCRA:
		a.Burst = n
		return a
	case algorithms.CalendarWindow:
		a.Limit = n
		return a
	}
	return a
}

// BucketLatest returns the latest time a token bucket's or GCRA's state has
// decided at, and false for any other state.
func BucketLatest(state State) (time.Time, bool) {
	if st, ok := state.(*bucketState); ok && st != nil {
		return time.UnixMicro(st.Latest), true
	}
	return time.Time{}, false
}

// FamilyOf is the model k's decisions follow.
func FamilyOf(k *algorithms.Kind) Family {
	switch k.String() {
	case "fixed_window":
		return FamilyFixedWindow
	case "token_bucket", "gcra":
		return FamilyBucket
	case "calendar_window":
		return FamilyCalendar
	}
	return FamilyLog
}

// TakesBurst reports whether k takes Params.Burst; a kind that does not
// requires it to be 0.
func TakesBurst(k *algorithms.Kind) bool { return FamilyOf(k) == FamilyBucket }

// TakesSubWindows reports whether k takes Params.SubWindows.
func TakesSubWindows(k *algorithms.Kind) bool { return k.String() == "sliding_window" }

// MaxLimit is the largest limit (or rate count, and burst) k takes: 2^50
// for most, EnvelopeCompactLogMaxLimit for the compact log.
func MaxLimit(k *algorithms.Kind) int64 {
	if k.String() == "compact_log" {
		return EnvelopeCompactLogMaxLimit
	}
	return EnvelopeMaxLimit
}

// Nominal returns k's algorithm set to limit per window in the way every
// kind can express it, for comparing algorithms side by side: a windowed
// algorithm admits limit per window, one with a burst refills at limit per
// window with a burst of limit, and one with sub-windows splits the window
// into subWindows. The calendar window admits limit per day, in UTC, for
// a window up to a day; per week for one up to a week; and per month for
// a longer one.
func Nominal(k *algorithms.Kind, limit int64, window time.Duration, subWindows int64) (algorithms.Algorithm, error) {
	if FamilyOf(k) == FamilyCalendar {
		p := algorithms.Params{Limit: limit, Period: "month"}
		switch {
		case window <= 24*time.Hour:
			p.Period = "day"
		case window <= 7*24*time.Hour:
			p.Period = "week"
		}
		return k.New(p)
	}
	p := algorithms.Params{Limit: limit, Window: window}
	if TakesBurst(k) {
		p.Burst = limit
	}
	if TakesSubWindows(k) {
		p.SubWindows = subWindows
	}
	return k.New(p)
}

// Names returns every algorithm's name, in the order of algorithms.Kinds.
func Names() []string {
	kinds := algorithms.Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.String()
	}
	return names
}

// CheckKind returns an error wrapping algorithms.ErrInvalidAlgorithm
// unless a is a value of one of package algorithms' types. Algorithm is
// sealed, but Go lets another type embed one of these and so satisfy it
// while changing its methods; such a value would run one step in memory
// and another in Redis. CheckDecision calls CheckKind, so every store
// rejects it.
func CheckKind(a algorithms.Algorithm) error {
	switch a.(type) {
	case algorithms.FixedWindow, algorithms.SlidingLog, algorithms.CompactLog,
		algorithms.SlidingWindow, algorithms.TokenBucket, algorithms.GCRA, algorithms.CalendarWindow:
		return nil
	case nil:
		return fmt.Errorf("%w: nil", algorithms.ErrInvalidAlgorithm)
	}
	if t := reflect.TypeOf(a); t.Kind() == reflect.Pointer &&
		t.Elem().PkgPath() == reflect.TypeOf(algorithms.Params{}).PkgPath() {
		return fmt.Errorf("%w: %T is a pointer: pass the algorithm by value", algorithms.ErrInvalidAlgorithm, a)
	}
	return fmt.Errorf("%w: %T is not one of package algorithms' types", algorithms.ErrInvalidAlgorithm, a)
}

// CheckDecision reports whether a store can run one decision of a at now
// with cost: a is valid, now is within [the Unix epoch,
// time.UnixMicro(EnvelopeMaxUnixMicro)], and cost is in [-MaxCost(a), MaxCost(a)].
func CheckDecision(a algorithms.Algorithm, now time.Time, cost int64) error {
	if err := CheckKind(a); err != nil {
		return err
	}
	if err := a.Validate(); err != nil {
		return err
	}
	if err := CheckCost(a, cost); err != nil {
		return err
	}
	return CheckTime(now)
}

// CheckRefund reports whether a store can run a refund of n units charged
// at at, at now: a is valid, n is in [1, MaxCost(a)], and both times are
// within [the Unix epoch, time.UnixMicro(EnvelopeMaxUnixMicro)].
func CheckRefund(a algorithms.Algorithm, now, at time.Time, n int64) error {
	if n <= 0 {
		return fmt.Errorf("%w: a refund must be > 0, got %d", algorithms.ErrInvalidCost, n)
	}
	if err := CheckDecision(a, now, n); err != nil {
		return err
	}
	return CheckTime(at)
}

// CheckCost reports whether cost is in [-MaxCost(a), MaxCost(a)].
func CheckCost(a algorithms.Algorithm, cost int64) error {
	limit := MaxCost(a)
	switch {
	case cost > limit:
		return fmt.Errorf(
			"%w: a cost of %d, over the %d that %s takes at once",
			algorithms.ErrCostExceedsLimit,
			cost,
			limit,
			a,
		)
	case cost < -limit:
		return fmt.Errorf(
			"%w: an inspection for a cost of %d, over the %d that %s takes at once",
			algorithms.ErrCostExceedsLimit,
			-cost,
			limit,
			a,
		)
	}
	return nil
}

// CheckTime reports whether t is within [the Unix epoch,
// time.UnixMicro(EnvelopeMaxUnixMicro)].
func CheckTime(t time.Time) error {
	if us := t.UnixMicro(); us < 0 || us > EnvelopeMaxUnixMicro {
		return fmt.Errorf("%w: %s is not between 1970-01-01 and %s", algorithms.ErrInvalidTime,
			t.Format(time.RFC3339Nano), time.UnixMicro(EnvelopeMaxUnixMicro).UTC().Format(time.RFC3339))
	}
	return nil
}

// CheckMaxWait reports whether maxWait is a wait Reserve accepts: a whole
// number of microseconds in [0, 2^50µs].
func CheckMaxWait(maxWait time.Duration) error {
	if maxWait == 0 {
		return nil
	}
	if maxWait < 0 || maxWait%time.Microsecond != 0 {
		return fmt.Errorf(
			"%w: the maximum wait must be a whole number of microseconds >= 0, got %v",
			algorithms.ErrInvalidTime,
			maxWait,
		)
	}
	if maxWait > EnvelopeMaxWindow {
		return fmt.Errorf("%w: the maximum wait %v is above 2^50µs", algorithms.ErrInvalidTime, maxWait)
	}
	return nil
}

// maxDuration is EnvelopeMaxWindow in microseconds.
const maxDuration = int64(EnvelopeMaxWindow / time.Microsecond)

// notOurs is the panic of a step given a value that is not one of package
// algorithms' types: CheckKind rejects it before any store decides.
func notOurs(a algorithms.Algorithm) string {
	return fmt.Sprintf("algo: no step for %T: not one of package algorithms' types, or a kind a switch here misses", a)
}

// notPacked is the panic of a packed operation given an algorithm that does
// not pack (Packs).
func notPacked(a algorithms.Algorithm) string {
	return fmt.Sprintf("algo: %T does not pack", a)
}

// timeFor returns how long n events take at rate r: n × Period / Count,
// rounded down to the microsecond. For example, 3 at algorithms.PerMinute(10)
// take 18s. r must be valid and n >= 0; a result above the largest
// time.Duration is capped there.
func timeFor(r algorithms.Rate, n int64) time.Duration {
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
		panic(
			fmt.Sprintf("algo: %s given a state of type %T: a store mixed up the state of two algorithms", name, state),
		)
	}
	return st
}
