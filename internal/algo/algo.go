// Package algo gives ratewise's stores, tools and tests what package
// algorithms keeps from its users: the decision step, refunds and bookings
// on a key's state, packing, the checks a store makes, and each kind's
// family. Users see only the algorithms' parameters, Validate and String.
//
// A store keeps a key's state opaque, as a State it got from Decide,
// Refund or Reserve, and hands it back on the key's next call.
package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algobridge"
)

type (
	// State is an algorithm's per-key state, opaque to stores; nil is no
	// state.
	State = any

	// Scope tells apart the states of one kind's algorithms: see
	// algobridge.Scope.
	Scope = algobridge.Scope

	// Quota is what an idle key admits at once and how long it takes to
	// get it back.
	Quota = algobridge.Quota

	// Words is a state packed into two integers.
	Words = algobridge.Words

	// Family is a class of algorithms whose decisions follow one model.
	Family = algobridge.Family

	// Derived is what a packed step derives from its algorithm's
	// parameters: see Derive.
	Derived = algobridge.Derived
)

// The families.
const (
	FamilyFixedWindow = algobridge.FamilyFixedWindow
	FamilyLog         = algobridge.FamilyLog
	FamilyBucket      = algobridge.FamilyBucket
)

var ops = algobridge.Registered().(*algobridge.Ops[algorithms.Algorithm, State, algorithms.Result, *algorithms.Kind, algorithms.Params])

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
func Decide(a algorithms.Algorithm, state State, now time.Time, cost int64) (State, algorithms.Result) {
	return ops.Decide(a, state, now, cost)
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
	return ops.Refund(a, state, now, at, n)
}

// Reserves reports whether a can book a request ahead (Reserve): the token
// bucket and GCRA.
func Reserves(a algorithms.Algorithm) bool { return ops.Reserves(a) }

// Reserve charges cost at once and reports Allowed true when the request's
// turn comes within maxWait, with delay the wait until then (0 when it may
// go now). When its turn is further away, nothing is charged, Allowed is
// false and RetryAfter is the wait until that turn. A booking is a debt on
// the key: Remaining is 0 and later requests wait behind it. maxWait must
// pass CheckMaxWait; with 0, Reserve decides as Decide does. a must be an
// algorithm that Reserves, unless maxWait is 0.
func Reserve(a algorithms.Algorithm, state State, now time.Time, cost int64, maxWait time.Duration) (State, algorithms.Result, time.Duration) {
	return ops.Reserve(a, state, now, cost, maxWait)
}

// Keeps reports whether Decide(state, now, cost) leaves state unchanged
// when cost is at most 0, or when cost is 1 and the request is denied: a
// log's denial drops expired records, and a bucket written under another
// rate count is converted by any decision. When it does, a denial's
// Result is what an inspection of cost 1 (a cost of -1) returns, so a
// store may decide either under a read lock, without writing. It must not
// be asked about another cost.
func Keeps(a algorithms.Algorithm, state State, now time.Time, cost int64) bool {
	return ops.Keeps(a, state, now, cost)
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
func Packs(a algorithms.Algorithm) bool { return ops.Packs(a) }

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
	return ops.Pack(a, state)
}

// Unpack returns the state that w and tag, from Pack, stand for. It reuses
// into's memory when into is a state of a's type, and allocates otherwise.
func Unpack(a algorithms.Algorithm, w Words, tag int64, into State) State {
	return ops.Unpack(a, w, tag, into)
}

// Clone returns a copy of state, which shares no memory with it, for an
// algorithm that packs (Packs): a state a store keeps beside the key's own,
// such as a lease's mark (store.Leaser), which Decide must not reuse.
func Clone(a algorithms.Algorithm, state State) State { return ops.Clone(a, state) }

// Inspect returns the Result Decide returns for the state w and tag stand
// for, at now, with a cost <= 0 (a cost above 0 is taken as its negative):
// an inspection, which needs no state of its own; and whether that
// inspection leaves the state as it is (Keeps), as it does unless the state
// was written under another rate count. It allocates nothing, so that
// stores can inspect a packed state under a read lock without sharing a
// scratch state; one that does not keep the state must be decided under
// the write lock, and written.
func Inspect(a algorithms.Algorithm, w Words, tag int64, now time.Time, cost int64) (res algorithms.Result, keeps bool) {
	return ops.Inspect(a, w, tag, now, cost)
}

// Derive returns what DecidePacked needs of a, an algorithm that packs
// (Packs), and would otherwise derive from its parameters on every call,
// such as a bucket's rate in lowest terms: a store keeps it beside a, for
// the decisions a makes.
func Derive(a algorithms.Algorithm) Derived { return ops.Derive(a) }

// DecidePacked is Decide, then Pack, on the state that w and tag stand for
// (Pack), or on no state when has is false, without unpacking it into a
// State of its own: it allocates nothing. d is Derive(a), and cost is at
// least 1. ok is false when the decision leaves no state, or one that has
// no packed form; the store then decides with Decide instead, on the same
// input, with the same Result. a must pack (Packs).
func DecidePacked(a algorithms.Algorithm, d *Derived, w Words, tag int64, has bool, now time.Time, cost int64) (_ Words, _ int64, _ algorithms.Result, ok bool) {
	return ops.DecidePacked(a, d, w, tag, has, now, cost)
}

// ScopeOf is what, beside the kind's name, tells apart the state a reads
// and writes: its window or period. Values with the same name and scope
// share a key's state.
func ScopeOf(a algorithms.Algorithm) Scope { return ops.Scope(a) }

// QuotaOf is the most cost an idle key admits at once, and the time an idle
// key takes to get it back in full.
func QuotaOf(a algorithms.Algorithm) Quota { return ops.Quota(a) }

// MaxCost is the largest cost a single request can have: the cost an idle
// key admits at once.
func MaxCost(a algorithms.Algorithm) int64 { return ops.MaxCost(a) }

// ParamsOf returns a's parameters in the form every algorithm shares;
// a.Kind().New(ParamsOf(a)) returns the same algorithm.
func ParamsOf(a algorithms.Algorithm) algorithms.Params { return ops.Params(a) }

// Charge returns res marked as the admission of a request of cost under a,
// as Decide and Reserve mark theirs (see Result.Charged). A store that
// decides outside Go, as the Redis store's Lua steps do, marks the
// admissions it reads back with it. A denial or a cost below 1 leaves res
// unchanged.
func Charge(res algorithms.Result, a algorithms.Algorithm, cost int64) algorithms.Result {
	return ops.Charge(res, a, cost)
}

// WithQuotaLimit returns a copy of a whose quota's limit (the limit,
// capacity or burst) is n, with every other parameter unchanged, so it
// keeps a's scope and the state a store holds for it. The copy is not
// validated, so that tests can build invalid values.
func WithQuotaLimit(a algorithms.Algorithm, n int64) algorithms.Algorithm {
	return ops.WithQuotaLimit(a, n)
}

// BucketLatest returns the latest time a token bucket's or GCRA's state has
// decided at, and false for any other state.
func BucketLatest(state State) (time.Time, bool) {
	us, ok := ops.BucketLatest(state)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
}

// FamilyOf is the model k's decisions follow.
func FamilyOf(k *algorithms.Kind) Family { return ops.Family(k) }

// TakesBurst reports whether k takes Params.Burst; a kind that does not
// requires it to be 0.
func TakesBurst(k *algorithms.Kind) bool { return ops.TakesBurst(k) }

// TakesSubWindows reports whether k takes Params.SubWindows.
func TakesSubWindows(k *algorithms.Kind) bool { return ops.TakesSubWindows(k) }

// MaxLimit is the largest limit (or rate count, and burst) k takes: 2^50
// for most, algorithms.CompactLogMaxLimit for the compact log.
func MaxLimit(k *algorithms.Kind) int64 { return ops.MaxLimit(k) }

// Nominal returns k's algorithm set to limit per window in the way every
// kind can express it, for comparing algorithms side by side: a windowed
// algorithm admits limit per window, one with a burst refills at limit per
// window with a burst of limit, and one with sub-windows splits the window
// into subWindows.
func Nominal(k *algorithms.Kind, limit int64, window time.Duration, subWindows int64) (algorithms.Algorithm, error) {
	return ops.Nominal(k, limit, window, subWindows)
}

// Names returns every algorithm's name, in the order of algorithms.Kinds.
func Names() []string {
	kinds := algorithms.Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Name()
	}
	return names
}

// CheckKind returns an error wrapping algorithms.ErrUnknownAlgorithm
// unless a is a value of one of package algorithms' types. Algorithm is
// sealed, but Go lets another type embed one of these and so satisfy it
// while changing its methods; such a value would run one step in memory
// and another in Redis. CheckDecision calls CheckKind, so every store
// rejects it.
func CheckKind(a algorithms.Algorithm) error { return ops.CheckKind(a) }

// CheckDecision reports whether a store can run one decision of a at now
// with cost: a is valid, now is within [the Unix epoch,
// algorithms.MaxTime], and cost is in [-MaxCost(a), MaxCost(a)].
func CheckDecision(a algorithms.Algorithm, now time.Time, cost int64) error {
	return ops.CheckDecision(a, now, cost)
}

// CheckRefund reports whether a store can run a refund of n units charged
// at at, at now: a is valid, n is in [1, MaxCost(a)], and both times are
// within [the Unix epoch, algorithms.MaxTime].
func CheckRefund(a algorithms.Algorithm, now, at time.Time, n int64) error {
	return ops.CheckRefund(a, now, at, n)
}

// CheckCost reports whether cost is in [-MaxCost(a), MaxCost(a)].
func CheckCost(a algorithms.Algorithm, cost int64) error { return ops.CheckCost(a, cost) }

// CheckTime reports whether t is within [the Unix epoch,
// algorithms.MaxTime].
func CheckTime(t time.Time) error { return ops.CheckTime(t) }

// CheckMaxWait reports whether maxWait is a wait Reserve accepts: a whole
// number of microseconds in [0, 2^50µs].
func CheckMaxWait(maxWait time.Duration) error { return ops.CheckMaxWait(maxWait) }
