package contract

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// The model checker drives seeded random sequences of operations that mix
// every capability (admissions of any cost, peeks, refunds of any age and
// amount, bookings and their cancellation, resets, limit changes of every
// kind, sets, clock readings behind and ahead, requests retried with their
// ID, and writes whose reply is lost and sent again) through a Limiter on
// the store under test and one on ReferenceStore, and checks after every
// step that:
//
//   - the two give the same Results and errors: what a store keeps,
//     expires, caches, batches or resends changes no decision;
//   - every Result is in range, and an admission says what it charged;
//   - a retried write changes nothing: its retry returns its first outcome;
//
// and after every sequence, on what was admitted and not refunded, that no
// window of any limit in force admits more than that limit (a naive model
// of each family, in exact rationals for the buckets) and that those
// admissions replay on an empty key. A failing sequence is shrunk to the
// shortest one that still fails, which the failure prints.

// ReplyLoser is a store under test that can lose the reply to the next
// command it sends, after its server ran it, as a network failing at the
// wrong moment does: the model checker's writes whose reply is lost, which
// the store's client sends again. The suite's Redis targets implement it.
type ReplyLoser interface {
	// LoseNextReply loses the reply to the next command the store sends.
	LoseNextReply()
	// KeepReplies disarms LoseNextReply if no command was sent since, and
	// reports whether a reply was lost.
	KeepReplies() bool
}

// checkerSequences is how many sequences the model checker runs for each
// algorithm on each store; RATEWISE_MODEL_SOAK multiplies it for a longer
// soak, such as RATEWISE_MODEL_SOAK=50 go test -run 'Contract/.*/model_check' ./contract_test.
const checkerSequences = 250

// sampledSequences is how many it runs on a Sampled target.
const sampledSequences = 80

// opKind is what a step does.
type opKind int

const (
	opAllow   opKind = iota // AllowN(n)
	opPeek                  // PeekN(n)
	opRefund                // Refund(the admission of step ref, n)
	opReserve               // ReserveN(n, maxWait)
	opCancel                // Cancel(the booking of step ref)
	opReset                 // Reset
	opTier                  // the key's limit becomes tiers[tier]
	opSet                   // a Stack of the key's limit and the partner: AllowN(n)
	opLease                 // the store's Lease(n, maxWait) under the key's limit (store.Leaser)
	opWait                  // the clock moves on by d
)

// op is one step of a sequence, on key "a" or "b".
type op struct {
	kind    opKind
	key     string
	inst    int // under Leased, the instance that makes it (0 otherwise)
	n       int64
	ref     int // opRefund, opCancel: the step whose admission or booking
	tier    int // opTier
	d       time.Duration
	maxWait time.Duration // opReserve
	// off is how far this step's clock reading is from the clock:
	// negative a stale reading, positive one ahead.
	off time.Duration
	// id: the step carries a request ID of its own; retried: its caller
	// sends it again with that ID; lost: its reply is lost after the store
	// ran it, and the store's client sends it again (a ReplyLoser).
	id, retried, lost bool
}

func (o op) String() string {
	var s string
	switch o.kind {
	case opAllow:
		s = fmt.Sprintf("AllowN(%s, %d)", o.key, o.n)
	case opPeek:
		s = fmt.Sprintf("PeekN(%s, %d)", o.key, o.n)
	case opRefund:
		s = fmt.Sprintf("Refund(%s, the admission of step %d, %d)", o.key, o.ref+1, o.n)
	case opReserve:
		s = fmt.Sprintf("ReserveN(%s, %d, %v)", o.key, o.n, o.maxWait)
	case opCancel:
		s = fmt.Sprintf("Cancel(the booking of step %d)", o.ref+1)
	case opReset:
		s = fmt.Sprintf("Reset(%s)", o.key)
	case opTier:
		s = fmt.Sprintf("%s's limit becomes tier %d", o.key, o.tier)
	case opSet:
		s = fmt.Sprintf("a Stack of %s's limit and the partner: AllowN(%d)", o.key, o.n)
	case opLease:
		s = fmt.Sprintf("Lease(%s, %d, %v)", o.key, o.n, o.maxWait)
	case opWait:
		return fmt.Sprintf("the clock moves %v", o.d)
	}
	if o.inst > 0 {
		s = fmt.Sprintf("instance %d: %s", o.inst, s)
	}
	if o.off != 0 {
		s += fmt.Sprintf(", its clock reading %+v off", o.off)
	}
	if o.id {
		s += ", with a request ID"
	}
	if o.retried {
		s += ", retried by its caller with the ID"
	}
	if o.lost {
		s += ", its reply lost and sent again by the store's client"
	}
	return s
}

// checkerSetup is what a case's sequences draw from: the limits a key may
// be moved to (the case's algorithm first, then lower and higher limits,
// bursts and rates, another window, another kind) and the partner of sets.
type checkerSetup struct {
	tiers   []algorithms.Algorithm
	partner algorithms.Algorithm
	window  time.Duration
}

func newCheckerSetup(c algCase) checkerSetup {
	const w = 10 * time.Second
	base := c.build(10, w)
	other := "sliding_log"
	if algo.FamilyOf(c.kind) == algo.FamilyLog {
		other = "gcra"
	}
	k, _ := algorithms.Lookup(other)
	kind, err := algo.Nominal(k, 10, w, 0)
	if err != nil {
		panic(err)
	}
	return checkerSetup{
		tiers: []algorithms.Algorithm{
			base,
			c.build(4, w),                 // a lower limit, and rate for the buckets
			c.build(25, w),                // a higher one
			algo.WithQuotaLimit(base, 3),  // a lower limit or burst alone
			algo.WithQuotaLimit(base, 40), // a higher one
			c.build(10, 2*w),              // another window or period: other state
			kind,                          // another kind: other state
			algo.WithQuotaLimit(c.build(25, w), 6),
		},
		partner: algorithms.FixedWindow{Limit: 30, Window: time.Hour},
		window:  w,
	}
}

// generate draws a sequence of about n steps: with bookings if books, with
// leases if leases, and with lost replies if lossy.
func (cs checkerSetup) generate(rng *rand.Rand, n int, books, leases, lossy bool) []op {
	var ops []op
	tier := map[string]int{"a": 0, "b": 0}
	var admissions, bookings []int // steps that may have admitted or booked, not yet given back
	for len(ops) < n {
		key := "a"
		if rng.IntN(4) == 0 {
			key = "b"
		}
		limit := algo.MaxCost(cs.tiers[tier[key]])
		o := op{key: key, n: 1 + rng.Int64N(limit)}
		if rng.IntN(3) > 0 {
			o.n = 1 + rng.Int64N(min(limit, 3))
		}
		switch r := rng.IntN(100); {
		case r < 12:
			o = op{kind: opWait, d: time.Duration(rng.Int64N(int64(cs.window / 2))).Truncate(time.Microsecond)}
			if rng.IntN(6) == 0 {
				o.d = time.Duration(rng.Int64N(int64(3 * cs.window))).Truncate(time.Microsecond)
			}
		case r < 20:
			o.kind, o.tier = opTier, rng.IntN(len(cs.tiers))
			tier[key] = o.tier
			ops = append(ops, o)
			continue
		case r < 28:
			o.kind = opPeek
		case r < 40 && len(admissions) > 0:
			// Each admission is refunded at most once, on its own key
			// (Limiter.Refund).
			j := rng.IntN(len(admissions))
			o.kind, o.ref = opRefund, admissions[j]
			admissions = slices.Delete(admissions, j, j+1)
			o.key, o.n = ops[o.ref].key, 1+rng.Int64N(ops[o.ref].n)
		case r < 48 && books:
			o.kind, o.maxWait = opReserve, time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			bookings = append(bookings, len(ops))
		case r < 53 && len(bookings) > 0:
			j := rng.IntN(len(bookings))
			o.kind, o.ref = opCancel, bookings[j]
			bookings = slices.Delete(bookings, j, j+1)
			o.key = ops[o.ref].key
		case r < 57:
			o.kind = opReset
		case r < 65:
			o.kind, o.n = opSet, 1+rng.Int64N(min(limit, algo.MaxCost(cs.partner), 3))
			admissions = append(admissions, len(ops))
		case r >= 94 && leases:
			o.kind, o.maxWait = opLease, time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			admissions = append(admissions, len(ops))
		default:
			o.kind = opAllow
			admissions = append(admissions, len(ops))
		}
		if o.kind != opWait {
			switch rng.IntN(10) {
			case 0:
				o.off = -time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			case 1:
				o.off = time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			}
			writes := o.kind != opPeek
			o.id = writes && rng.IntN(4) == 0
			// A Reservation is cancelled once, whatever its caller does.
			o.retried = o.id && o.kind != opCancel && rng.IntN(2) == 0
			o.lost = writes && lossy && rng.IntN(5) == 0
		}
		ops = append(ops, o)
	}
	return ops
}

// checkerSide is a store's side of a sequence: its limiter, its Sets and
// what each step returned.
type checkerSide struct {
	store    store.Store
	l        *ratewise.Limiter
	sets     map[int]*ratewise.Stack // by the tier of the key's limit
	results  []any                   // each step's: ratewise.Result, ratewise.MultiResult, *ratewise.Reservation
	errs     []error
	clock    *ratewisetest.Clock
	setup    checkerSetup
	prefix   string
	tier     map[string]int
	tierOpts []ratewise.Option
}

func newCheckerSide(s store.Store, setup checkerSetup, namespace string, clock *ratewisetest.Clock) (*checkerSide, error) {
	side := &checkerSide{store: s, sets: map[int]*ratewise.Stack{}, clock: clock, setup: setup, prefix: namespace, tier: map[string]int{"a": 0, "b": 0}}
	side.tierOpts = []ratewise.Option{ratewise.WithClock(clock), ratewise.WithNamespace(namespace)}
	l, err := ratewise.New(s, setup.tiers[0], append(side.tierOpts, ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
		return setup.tiers[side.tier[key]], nil
	}))...)
	side.l = l
	return side, err
}

// latest returns the latest time the reference store's state of key holds
// under its limit, for a bucket (see history.record); the zero time for
// none.
func (s *checkerSide) latest(key string) time.Time {
	rs, ok := s.store.(*refStore)
	if !ok {
		return time.Time{}
	}
	alg := s.setup.tiers[s.tier[key]]
	rs.mu.Lock()
	defer rs.mu.Unlock()
	latest, _ := algo.BucketLatest(rs.states[keyOf(s.prefix+":"+key, alg)])
	return latest
}

// set returns the Stack of the tier's limit and the partner.
func (s *checkerSide) set(tier int) (*ratewise.Stack, error) {
	if set, ok := s.sets[tier]; ok {
		return set, nil
	}
	set, err := ratewise.NewStack(s.store, []algorithms.Algorithm{s.setup.tiers[tier], s.setup.partner}, s.tierOpts...)
	if err == nil {
		s.sets[tier] = set
	}
	return set, err
}

// do runs step i, o, and returns what it returned, and its error.
func (s *checkerSide) do(ctx context.Context, i int, o op) (any, error) {
	switch o.kind {
	case opAllow:
		return s.l.AllowN(ctx, o.key, o.n)
	case opPeek:
		return s.l.PeekN(ctx, o.key, o.n)
	case opRefund:
		var charged ratewise.Result
		switch r := s.results[o.ref].(type) {
		case ratewise.Result:
			charged = r
		case ratewise.MultiResult:
			charged = r.Results[0] // the set's charge of the key's limit
		case leased:
			charged = r.res
		}
		return s.l.Refund(ctx, o.key, charged, o.n)
	case opReserve:
		r, err := s.l.ReserveN(ctx, o.key, o.n, o.maxWait)
		if err != nil {
			return nil, err
		}
		return r, nil
	case opCancel:
		r, ok := s.results[o.ref].(*ratewise.Reservation)
		if !ok {
			return nil, nil
		}
		return r.Cancel(ctx)
	case opReset:
		return nil, s.l.Reset(ctx, o.key)
	case opTier:
		s.tier[o.key] = o.tier
		return nil, nil
	case opSet:
		set, err := s.set(s.tier[o.key])
		if err != nil {
			return nil, err
		}
		return set.AllowN(ctx, o.key, o.n)
	case opLease:
		ls, ok := s.store.(store.Leaser)
		if !ok {
			return nil, fmt.Errorf("%T does not lease", s.store)
		}
		res, delay, err := ls.Lease(ctx, store.Key{Namespace: s.prefix, Name: o.key}, s.setup.tiers[s.tier[o.key]], s.clock.Now(), o.n, o.maxWait)
		if err != nil {
			return nil, err
		}
		return leased{res, delay}, nil
	}
	return nil, nil
}

// leased is what a Lease returned.
type leased struct {
	res   ratewise.Result
	delay time.Duration
}
