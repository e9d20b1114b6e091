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
// kind, sets, clock readings behind and ahead, idle gaps longer than a
// state's life, requests retried with their ID, and writes whose reply is
// lost) through a Limiter on the store under test and one on
// referenceStore. Runs of steps are made at once, from goroutines of their
// own, so that a store that shares round trips between concurrent calls
// (Coalesced) decides them in batches, as it does by default; the store's
// outcomes of such a round must be those of some order of its steps on
// the reference store (they are linearizable), which the checker searches
// for. It checks after every step or round that:
//
//   - the two give the same Results and errors: what a store keeps,
//     expires, caches, batches or resends changes no decision;
//   - every Result is in range, and an admission says what it charged;
//   - a retried write changes nothing: its retry returns its first outcome;
//
// and after every sequence, on what the store under test admitted and did
// not refund, that no window of any limit in force admits more than that
// limit (a naive model of each family, in exact rationals for the buckets)
// and that those admissions replay on an empty key. A failing sequence is
// shrunk to the shortest one that still fails, which the failure prints,
// with the seed that draws it again.
//
// On a store that decides on its own clock (StoreClock), whose time the
// checker cannot step, windows are tens of milliseconds long, so that real
// time moves them within a sequence, and the reference decides each step
// at the time the store's Result says it was decided at (Result.At; a
// booking's turn less its wait).

// replyLoser is a store under test that can lose the reply to the next
// command it sends, after its server ran it, as a network failing at the
// wrong moment does: the model checker's writes whose reply is lost. The
// suite's Redis targets implement it (go-redis sends the command again) and
// its PostgreSQL ones, through a proxy (the call, and every call that
// shared its round trip, fails with store.ErrMaybeDecided; the checker
// then retries one that carries a request ID with it, and takes the
// outcome of one that does not as unknown, its effect the reference's).
type replyLoser interface {
	// LoseNextReply loses the reply to the next command the store sends.
	LoseNextReply()
	// KeepReplies disarms LoseNextReply if no command was sent since, and
	// reports whether a reply was lost.
	KeepReplies() bool
}

// expiryAdvancer is a store under test whose expiry runs on a clock the test
// moves: a memory store's own clock (storememory.WithClock), a miniredis
// the test steps. The model checker moves it on over its idle gaps, so
// that states expire, and are swept, within a sequence; it keeps it behind
// the limiters' clock by a window, the furthest behind a clock reading of
// the checker's goes, so that no reading finds gone a state that still
// counts at it.
type expiryAdvancer interface {
	// AdvanceExpiry moves the clock the store's expiry follows on by d.
	AdvanceExpiry(d time.Duration)
}

// checkerSequences is how many sequences the model checker runs for each
// algorithm on each store; RATEWISE_MODEL_SOAK multiplies it for a longer
// soak, such as RATEWISE_MODEL_SOAK=50 go test -run 'Contract/.*/.*/model_check' ./contract_test.
const checkerSequences = 250

// maxRound is the most steps the model checker makes at once, and
// maxRoundKey the most of them on one key: the checker searches the orders
// of each key's steps for one the reference agrees with, which takes up to
// maxRoundKey! tries.
const (
	maxRound    = 12
	maxRoundKey = 6
)

// keyB is the checker's second key, beside "a". It holds what a store
// might put between a key and a request ID: the checker gives a request
// on "a" the ID "q:once:n" and one on keyB the ID "n", so that a store that
// spelled its once records as key, separator and ID would take one for the
// other.
const keyB = "a:once:q"

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
	opLease                 // the store's Lease(n, maxWait) under the key's limit (store.Store.Lease)
	opWait                  // the clock moves on by d
)

// op is one step of a sequence, on key "a" or keyB.
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
	// ran it (a replyLoser).
	id, retried, lost bool
	// par: the step is made at once with the step before it, in a round.
	par bool
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
		s += ", its reply lost"
	}
	if o.par {
		s += ", at once with the step before"
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

// checkerWindow is the window, or period, of the model checker's limits;
// on a store's own clock, serverWindow, which real time moves within a
// sequence.
const (
	checkerWindow = 10 * time.Second
	serverWindow  = 40 * time.Millisecond
)

func newCheckerSetup(c algCase, serverTime bool) checkerSetup {
	w := checkerWindow
	if serverTime {
		w = serverWindow
	}
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

// draw is what a sequence may hold: bookings, leases, lost replies,
// rounds of steps made at once, and on a store's own clock, neither clock
// readings off nor waits, which the checker cannot make. An idle sequence
// has more idle gaps of a window or more, and no reading off the clock,
// so that the checker may move a store's expiry clock with it (see
// expiryAdvancer).
type draw struct {
	books, leases, lossy, rounds, serverTime, idle bool
	// lostInRounds: steps made at once may lose a reply too (see
	// LostRepliesFail).
	lostInRounds bool
}

// generate draws a sequence of about n steps.
func (cs checkerSetup) generate(rng *rand.Rand, n int, d draw) []op {
	var ops []op
	tier := map[string]int{"a": 0, keyB: 0}
	var admissions, bookings []int // steps that may have admitted or booked, not yet given back
	for len(ops) < n {
		if d.rounds && rng.IntN(6) == 0 {
			ops, admissions = cs.round(rng, ops, admissions, tier, d)
			continue
		}
		key := "a"
		if rng.IntN(4) == 0 {
			key = keyB
		}
		limit := algo.MaxCost(cs.tiers[tier[key]])
		o := op{key: key, n: 1 + rng.Int64N(limit)}
		if rng.IntN(3) > 0 {
			o.n = 1 + rng.Int64N(min(limit, 3))
		}
		switch r := rng.IntN(100); {
		case r < 12:
			o = op{kind: opWait, d: time.Duration(rng.Int64N(int64(cs.window / 2))).Truncate(time.Microsecond)}
			if rng.IntN(6) == 0 || d.idle && rng.IntN(2) == 0 {
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
		case r < 48 && d.books:
			o.kind, o.maxWait = opReserve, time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			bookings = append(bookings, len(ops))
		case r < 53 && len(bookings) > 0 && !d.serverTime:
			// Cancel gives back only before the booking's turn on the
			// limiter's clock, which on a store's own clock is not the
			// time the store decides at.
			j := rng.IntN(len(bookings))
			o.kind, o.ref = opCancel, bookings[j]
			bookings = slices.Delete(bookings, j, j+1)
			o.key = ops[o.ref].key
		case r < 57:
			o.kind = opReset
		case r < 65:
			o.kind, o.n = opSet, 1+rng.Int64N(min(limit, algo.MaxCost(cs.partner), 3))
			admissions = append(admissions, len(ops))
		case r >= 94 && d.leases:
			o.kind, o.maxWait = opLease, time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			admissions = append(admissions, len(ops))
		default:
			o.kind = opAllow
			admissions = append(admissions, len(ops))
		}
		if o.kind == opWait && d.serverTime {
			continue
		}
		if o.kind != opWait {
			switch rng.IntN(10) {
			case 0:
				o.off = -time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			case 1:
				o.off = time.Duration(rng.Int64N(int64(cs.window))).Truncate(time.Microsecond)
			}
			if d.serverTime || d.idle {
				o.off = 0
			}
			writes := o.kind != opPeek
			o.id = writes && rng.IntN(4) == 0
			// A Reservation is cancelled once, whatever its caller does.
			// On a store's own clock, time passes before a retry, past
			// which a store forgets what a request charged that no longer
			// counts, and the reference never does: no retries there.
			o.retried = o.id && o.kind != opCancel && !d.serverTime && rng.IntN(2) == 0
			// A reply lost where the call then fails costs a connection
			// (see LostRepliesFail), which the store's pool makes again:
			// fewer there. On a store's own clock only a client that sends
			// again loses replies, and only of steps alone (lossOK): as
			// many as elsewhere, so that a run of the rule is sure to
			// lose some (1 in 20 left 80 sequences with none, now and
			// then).
			lose := 5
			if !d.lostInRounds && !d.serverTime {
				lose = 20
			}
			o.lost = writes && d.lossy && lossOK(o, d) && rng.IntN(lose) == 0
			// A step that may share a round trip joins the round before
			// it, now and then.
			o.par = d.rounds && len(ops) > 0 && joins(o) && joins(ops[len(ops)-1]) && rng.IntN(3) == 0 &&
				roundLen(ops) < maxRound && roundOn(ops, o.key) < maxRoundKey && (o.kind != opRefund || !inRound(ops, o.ref)) &&
				(d.lostInRounds || !o.lost && !ops[len(ops)-1].lost)
		}
		ops = append(ops, o)
	}
	return ops
}

// round appends a round of 4 to maxRound steps made at once to ops: a
// burst of admissions, peeks and sets on both keys, as concurrent callers
// make, which a store that coalesces decides in batches.
func (cs checkerSetup) round(rng *rand.Rand, ops []op, admissions []int, tier map[string]int, d draw) ([]op, []int) {
	on := map[string]int{}
	for j := range 4 + rng.IntN(maxRound-3) {
		key := "a"
		if rng.IntN(2) == 0 && on[keyB] < maxRoundKey || on["a"] == maxRoundKey {
			key = keyB
		}
		on[key]++
		limit := algo.MaxCost(cs.tiers[tier[key]])
		o := op{key: key, n: 1 + rng.Int64N(min(limit, 3)), par: j > 0}
		switch r := rng.IntN(10); {
		case r < 2:
			o.kind = opPeek
		case r < 4:
			o.kind, o.n = opSet, 1+rng.Int64N(min(limit, algo.MaxCost(cs.partner), 3))
			admissions = append(admissions, len(ops))
		default:
			o.kind = opAllow
			admissions = append(admissions, len(ops))
		}
		o.id = o.kind != opPeek && rng.IntN(8) == 0
		o.lost = o.kind != opPeek && d.lossy && d.lostInRounds && lossOK(o, d) && rng.IntN(10) == 0
		ops = append(ops, o)
	}
	return ops, admissions
}

// joins reports whether o may be made at once with other steps: an
// admission, a peek, a set or a refund, at the clock's reading, not
// retried by its caller.
func joins(o op) bool {
	switch o.kind {
	case opAllow, opPeek, opSet, opRefund:
		return o.off == 0 && !o.retried
	}
	return false
}

// roundOn returns how many steps the last round of ops makes on key.
func roundOn(ops []op, key string) int {
	n := 0
	for _, o := range ops[len(ops)-roundLen(ops):] {
		if o.key == key {
			n++
		}
	}
	return n
}

// roundLen returns how many steps the last round of ops holds.
func roundLen(ops []op) int {
	n := 1
	for i := len(ops) - 1; i > 0 && ops[i].par; i-- {
		n++
	}
	return n
}

// inRound reports whether step i is in the last round of ops.
func inRound(ops []op, i int) bool {
	return i >= len(ops)-roundLen(ops)
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

func newCheckerSide(
	s store.Store,
	setup checkerSetup,
	namespace string,
	clock *ratewisetest.Clock,
) (*checkerSide, error) {
	side := &checkerSide{
		store:  s,
		sets:   map[int]*ratewise.Stack{},
		clock:  clock,
		setup:  setup,
		prefix: namespace,
		tier:   map[string]int{"a": 0, keyB: 0},
	}
	side.tierOpts = []ratewise.Option{ratewise.WithClock(clock), ratewise.WithNamespace(namespace)}
	l, err := ratewise.New(
		s,
		setup.tiers[0],
		append(side.tierOpts, ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
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
		res, delay, err := s.store.Lease(
			ctx,
			store.Key{Namespace: s.prefix, Name: o.key},
			s.setup.tiers[s.tier[o.key]],
			s.clock.Now(),
			o.n,
			o.maxWait,
		)
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

// lossOK reports whether step o may lose its reply. On a store's own clock
// only a decision without a request ID does (the Redis store's default
// path, which records it in its state's value and sends it again). The
// other writes keep a once record of an admission only, so a resend of a
// denial that wrote (a cost above 1 moves the key's latest time) writes
// again at a later time, which the reference, deciding each step once at
// the time its Result gives, does not: on a clock the checker steps, the
// resend comes at the same time and changes nothing.
func lossOK(o op, d draw) bool {
	return !d.serverTime || o.kind == opAllow && !o.id
}
