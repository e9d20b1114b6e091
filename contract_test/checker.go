package contract

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
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
	opWait                  // the clock moves on by d
)

// op is one step of a sequence, on key "a" or "b".
type op struct {
	kind    opKind
	key     string
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
	case opWait:
		return fmt.Sprintf("the clock moves %v", o.d)
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

// generate draws a sequence of about n steps.
func (cs checkerSetup) generate(rng *rand.Rand, n int, books, lossy bool) []op {
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
	results  []any                 // each step's: ratewise.Result, ratewise.MultiResult, *ratewise.Reservation
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
	}
	return nil, nil
}

// runSequence runs the sequence ops, on store and on a fresh
// ReferenceStore, in namespace, and returns the first broken promise, or
// "", and how many replies the store lost.
func (e *env) runSequence(ops []op, namespace string, setup checkerSetup) (string, int) {
	ctx := context.Background()
	start := e.c.start.Truncate(time.Second)
	clock := ratewisetest.NewClock(start)
	sut, err := newCheckerSide(e.store, setup, namespace, clock)
	if err != nil {
		return err.Error(), 0
	}
	ref, err := newCheckerSide(ReferenceStore(), setup, namespace, clock)
	if err != nil {
		return err.Error(), 0
	}
	lost := 0
	loser, _ := e.store.(ReplyLoser)
	h := newHistory(setup)
	for i, o := range ops {
		if (o.kind == opRefund || o.kind == opCancel) && h.resetSince(o.ref) {
			// Refunding an admission, or cancelling a booking, after its
			// state was Reset is not allowed (Limiter.Refund,
			// Reservation.Cancel): skipped, on both.
			o = op{kind: opWait}
		}
		base := clock.Now()
		clock.Set(base.Add(o.off))
		var rctx context.Context = ctx
		if o.id {
			rctx = ratewise.WithRequestID(ctx, namespace+"/"+strconv.Itoa(i))
		}
		lose := o.lost && loser != nil
		if lose {
			loser.LoseNextReply()
		}
		got, gotErr := sut.do(rctx, i, o)
		if lose && loser.KeepReplies() {
			lost++
		}
		latest := ref.latest(o.key)
		want, wantErr := ref.do(rctx, i, o)
		if o.retried {
			again, againErr := sut.do(rctx, i, o)
			if msg := same(again, againErr, got, gotErr); msg != "" {
				return fmt.Sprintf("step %d, retried with its request ID, did not return its first outcome: %s", i+1, msg), lost
			}
			ref.do(rctx, i, o)
		}
		clock.Set(base)
		if o.kind == opWait {
			clock.Advance(o.d)
		}
		sut.results, sut.errs = append(sut.results, got), append(sut.errs, gotErr)
		ref.results, ref.errs = append(ref.results, want), append(ref.errs, wantErr)
		if msg := same(got, gotErr, want, wantErr); msg != "" {
			return fmt.Sprintf("step %d gave another outcome than the reference store: %s", i+1, msg), lost
		}
		if msg := h.record(i, o, ref, base.Add(o.off), latest); msg != "" {
			return fmt.Sprintf("step %d: %s", i+1, msg), lost
		}
	}
	// Every state the sequence may have touched, peeked on both: what the
	// store holds at the end is what the reference holds, whether or not a
	// step's Result showed it. One peek per state: under the key's limit
	// for its own, under the first tier of each other kind and scope, and
	// under the partner.
	for _, key := range []string{"a", "b"} {
		current := setup.tiers[ref.tier[key]]
		algs := []algorithms.Algorithm{current, setup.partner}
		for _, t := range setup.tiers {
			if !slices.ContainsFunc(algs, func(a algorithms.Algorithm) bool { return sameState(a, t) }) {
				algs = append(algs, t)
			}
		}
		for _, alg := range algs {
			got, gotErr := sut.peek(ctx, key, alg)
			want, wantErr := ref.peek(ctx, key, alg)
			if msg := same(got, gotErr, want, wantErr); msg != "" {
				return fmt.Sprintf("at the end, a peek of %q under %v gave another outcome than the reference store: %s", key, alg, msg), lost
			}
		}
	}
	return h.check(), lost
}

// sameState reports whether a and b keep one state for a key: the same
// kind and Scope.
func sameState(a, b algorithms.Algorithm) bool {
	return a.Kind() == b.Kind() && algo.ScopeOf(a) == algo.ScopeOf(b)
}

// peek returns PeekN(key, 1) under alg, on the side's store and clock.
func (s *checkerSide) peek(ctx context.Context, key string, alg algorithms.Algorithm) (any, error) {
	l, err := ratewise.New(s.store, alg, s.tierOpts...)
	if err != nil {
		return nil, err
	}
	return l.PeekN(ctx, key, 1)
}

// same compares two outcomes of one step; "" when they are the same.
func same(got any, gotErr error, want any, wantErr error) string {
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && errClass(gotErr) != errClass(wantErr) {
		return fmt.Sprintf("error %v, the reference %v", gotErr, wantErr)
	}
	if gotErr != nil {
		return ""
	}
	switch g := got.(type) {
	case ratewise.Result:
		if w := want.(ratewise.Result); g != w {
			return fmt.Sprintf("%+v, the reference %+v", g, w)
		}
	case ratewise.MultiResult:
		w := want.(ratewise.MultiResult)
		if g.Allowed != w.Allowed || g.Binding != w.Binding || g.RetryAfter != w.RetryAfter || !equalResults(g.Results, w.Results) {
			return fmt.Sprintf("%+v, the reference %+v", g, w)
		}
	case *ratewise.Reservation:
		w := want.(*ratewise.Reservation)
		if g.OK() != w.OK() || g.Delay() != w.Delay() || g.Result() != w.Result() {
			return fmt.Sprintf("a booking %+v (delay %v), the reference %+v (delay %v)", g.Result(), g.Delay(), w.Result(), w.Delay())
		}
	}
	return ""
}

// errClass is the sentinel an error of the checker's steps wraps.
func errClass(err error) error {
	for _, s := range []error{ratewise.ErrNotAdmitted, algorithms.ErrInvalidCost, algorithms.ErrCostExceedsLimit, store.ErrUnavailable, store.ErrMaybeDecided, store.ErrUnsupported} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// checker is the model_check rule.
func modelCheck(e *env) {
	setup := newCheckerSetup(e.c)
	books := algo.Reserves(e.c.alg)
	_, lossy := e.store.(ReplyLoser)
	sequences := checkerSequences
	if e.cfg.sampled {
		sequences = sampledSequences
	}
	if soak, err := strconv.Atoi(os.Getenv("RATEWISE_MODEL_SOAK")); err == nil && soak > 1 {
		sequences *= soak
	}
	rng := rand.New(rand.NewPCG(23, uint64(len(e.c.name))))
	var steps, lost int
	for seq := range sequences {
		ops := setup.generate(rng, 6+rng.IntN(20), books, lossy)
		steps += len(ops)
		namespace := e.checkerNamespace(seq)
		realStart := time.Now()
		msg, n := e.runSequence(ops, namespace, setup)
		lost += n
		if msg == "" {
			continue
		}
		// A sequence whose state outlived its keys' time to live in real
		// time (a Redis server's expiry, ExpiryGrace past it) is run again.
		if time.Since(realStart) > e.cfg.grace && e.cfg.grace > 0 {
			if again, _ := e.runSequence(ops, e.checkerNamespace(seq)+"r", setup); again == "" {
				continue
			}
		}
		shrunk, why := e.shrink(ops, setup, msg)
		var b strings.Builder
		fmt.Fprintf(&b, "sequence %d of %d (%d steps) broke it; shrunk to %d steps, which break it with: %s\n", seq+1, sequences, len(ops), len(shrunk), why)
		for i, o := range shrunk {
			fmt.Fprintf(&b, "  %2d. %v\n", i+1, o)
		}
		fmt.Fprintf(&b, "  tiers: %v; partner %v", setup.tiers, setup.partner)
		e.fatalf("%s", b.String())
	}
	if lossy && lost == 0 {
		e.fatalf("%d sequences on a store that can lose replies lost none: the retried writes were not checked", sequences)
	}
	e.t.Logf("%d sequences, %d steps, %d replies lost, on %s", sequences, steps, lost, e.c.name)
}

// checkerNamespace returns a namespace of the rule's own, new on each
// call, for a sequence's keys.
func (e *env) checkerNamespace(seq int) string {
	e.n++
	return strings.ReplaceAll(fmt.Sprintf("mc.%s.%s.%d.%d", runID, e.t.Name(), seq, e.n), ":", ".")
}

// shrink returns the shortest sequence it finds that still breaks a
// promise, by dropping steps (and the steps that refer to them) and
// simplifying the rest, and what it breaks.
func (e *env) shrink(ops []op, setup checkerSetup, msg string) ([]op, string) {
	fails := func(cand []op) (string, bool) {
		m, _ := e.runSequence(cand, e.checkerNamespace(len(cand)), setup)
		return m, m != ""
	}
	for chunk := len(ops) / 2; chunk >= 1; chunk /= 2 {
		for i := 0; i < len(ops); {
			cand := without(ops, i, chunk)
			if m, ok := fails(cand); ok && len(cand) < len(ops) {
				ops, msg = cand, m
				continue
			}
			i += chunk
		}
	}
	// Simpler steps: no stale reading, no ID, nothing lost.
	for i := range ops {
		for _, simplify := range []func(*op){
			func(o *op) { o.off = 0 },
			func(o *op) { o.id, o.retried = false, false },
			func(o *op) { o.lost = false },
		} {
			cand := slices.Clone(ops)
			simplify(&cand[i])
			if cand[i] == ops[i] {
				continue
			}
			if m, ok := fails(cand); ok {
				ops, msg = cand, m
			}
		}
	}
	return ops, msg
}

// without returns ops less the n steps from i, and the steps that refer to
// them, with references renumbered.
func without(ops []op, i, n int) []op {
	gone := map[int]bool{}
	for j := i; j < min(i+n, len(ops)); j++ {
		gone[j] = true
	}
	var out []op
	index := map[int]int{}
	for j, o := range ops {
		if (o.kind == opRefund || o.kind == opCancel) && gone[o.ref] {
			gone[j] = true
		}
		if gone[j] {
			continue
		}
		if o.kind == opRefund || o.kind == opCancel {
			o.ref = index[o.ref]
		}
		index[j] = len(out)
		out = append(out, o)
	}
	return out
}

// history keeps what the reference store decided on each state, in the
// order it decided it, to check the promises that hold over a sequence.
type history struct {
	setup  checkerSetup
	states map[refKey]*stateHistory
	// kept is what each admission still counts: its cost less what
	// refunds and cancellations gave back; by step, and for a set the
	// partner's too (step -2-i).
	kept map[int]*admission
	// at is the time each step was made at, on the limiters' clock.
	at map[int]time.Time
}

type stateHistory struct {
	events []event2 // since the last reset, in the order decided
	resets []int    // the steps that reset the state
}

type admission struct {
	state refKey
	cost  int64
}

// event2 is one decision on a state: an admission (step, into kept) or a
// decision that charged nothing (step -1), under alg; eff is the time it was
// made at, at the time it counts at (a booking's turn; otherwise eff).
type event2 struct {
	step    int
	alg     algorithms.Algorithm
	eff, at time.Time
}

func newHistory(setup checkerSetup) *history {
	return &history{setup: setup, states: map[refKey]*stateHistory{}, kept: map[int]*admission{}, at: map[int]time.Time{}}
}

func (h *history) state(k refKey) *stateHistory {
	sh := h.states[k]
	if sh == nil {
		sh = &stateHistory{}
		h.states[k] = sh
	}
	return sh
}

// record notes what step i, o, did on the reference, whose results ref
// holds, at the clock reading now, and checks its Results are in range.
// latest is the reference state's latest time before the step, the time a
// booking was decided at if now is behind it.
func (h *history) record(i int, o op, ref *checkerSide, now, latest time.Time) string {
	h.at[i] = now
	if ref.errs[i] != nil {
		return ""
	}
	key := ref.prefix + ":" + o.key
	alg := ref.setup.tiers[ref.tier[o.key]]
	note := func(alg algorithms.Algorithm, res ratewise.Result, step int, cost int64) string {
		if msg := inRange(alg, res, cost, now); msg != "" {
			return msg
		}
		k := keyOf(key, alg)
		if step == -1 || !res.Allowed || cost == 0 {
			step = -1
		} else {
			h.kept[step] = &admission{state: k, cost: cost}
		}
		sh := h.state(k)
		sh.events = append(sh.events, event2{step: step, alg: alg, eff: res.At, at: res.At})
		return ""
	}
	switch o.kind {
	case opAllow:
		return note(alg, ref.results[i].(ratewise.Result), i, o.n)
	case opPeek:
		return note(alg, ref.results[i].(ratewise.Result), -1, 0)
	case opReserve:
		r := ref.results[i].(*ratewise.Reservation)
		res := r.Result()
		if !r.OK() {
			return note(alg, res, -1, 0)
		}
		if msg := inRange(alg, res, o.n, now); msg != "" {
			return "a booking: " + msg
		}
		k := keyOf(key, alg)
		h.kept[i] = &admission{state: k, cost: o.n}
		eff := now
		if latest.After(eff) {
			eff = latest
		}
		sh := h.state(k)
		sh.events = append(sh.events, event2{step: i, alg: alg, eff: eff, at: res.At})
	case opSet:
		sr := ref.results[i].(ratewise.MultiResult)
		for j, a := range []algorithms.Algorithm{alg, h.setup.partner} {
			cost, step := int64(0), -1
			if sr.Allowed {
				cost, step = o.n, i
				if j == 1 {
					step = -2 - i
				}
			}
			if msg := note(a, sr.Results[j], step, cost); msg != "" {
				return fmt.Sprintf("limit %d of a set: %s", j, msg)
			}
		}
	case opRefund, opCancel:
		// What comes back counts no more. A cancellation once the
		// booking's turn has come on the limiter's clock, the booking's
		// time plus its Delay, gives nothing back (Reservation.Cancel).
		if r, ok := ref.results[o.ref].(*ratewise.Reservation); o.kind == opCancel && (!ok || !now.Before(h.at[o.ref].Add(r.Delay()))) {
			return ""
		}
		if a := h.kept[o.ref]; a != nil {
			n := o.n
			if o.kind == opCancel {
				n = a.cost
			}
			a.cost -= min(n, a.cost)
		}
	case opReset:
		sh := h.state(keyOf(key, alg))
		sh.events = nil
		sh.resets = append(sh.resets, i)
	}
	return ""
}

// resetSince reports whether the state the admission of step i charged
// was reset after it.
func (h *history) resetSince(i int) bool {
	a := h.kept[i]
	if a == nil {
		return false
	}
	for _, r := range h.state(a.state).resets {
		if r > i {
			return true
		}
	}
	return false
}

// inRange checks a Result of alg for a request of cost (0 for none) at now.
func inRange(alg algorithms.Algorithm, res ratewise.Result, cost int64, now time.Time) string {
	limit := algo.MaxCost(alg)
	switch {
	case res.Limit != limit:
		return fmt.Sprintf("%+v: Limit %d, want %d", res, res.Limit, limit)
	case res.Remaining < 0 || res.Remaining > limit:
		return fmt.Sprintf("%+v: Remaining outside [0, %d]", res, limit)
	case res.RetryAfter < 0 || res.ResetAfter < 0:
		return fmt.Sprintf("%+v: a negative wait", res)
	case res.Allowed != (res.RetryAfter == 0):
		return fmt.Sprintf("%+v: Allowed %v with RetryAfter %v", res, res.Allowed, res.RetryAfter)
	case res.At.Before(now):
		return fmt.Sprintf("%+v: At before now %v", res, now)
	case res.Allowed && cost > 0 && res.Remaining > limit-cost:
		return fmt.Sprintf("%+v: Remaining %d after %d of %d", res, res.Remaining, cost, limit)
	}
	if a, c := res.Charged(); res.Allowed && cost > 0 && (a != alg || c != cost) {
		return fmt.Sprintf("%+v says it charged %v, %d; want %v, %d", res, a, c, alg, cost)
	}
	return ""
}

// check checks, for each state, that what was admitted and not given back
// never made any window exceed the limit in force when it was admitted (a
// naive model of each family), and that it replays on an empty key with the
// algorithm's own step.
func (h *history) check() string {
	for k, sh := range h.states {
		if len(sh.events) == 0 {
			continue
		}
		bound := h.windowBound
		if algo.FamilyOf(sh.events[0].alg.Kind()) == algo.FamilyBucket {
			bound = h.bucketBound
		}
		if msg := bound(sh.events); msg != "" {
			return fmt.Sprintf("%s on %s: %s", k.kind, k.scope, msg)
		}
		if msg := h.replay(sh.events); msg != "" {
			return fmt.Sprintf("%s on %s: %s", k.kind, k.scope, msg)
		}
	}
	return ""
}

// windowBound: at each admission, what was admitted before it and not given
// back, with it, in its window (per window for the fixed window, in the
// window ending at it for the logs, by sub-window for the counter), is at
// most its limit.
func (h *history) windowBound(evs []event2) string {
	var seen []event2
	for _, ev := range evs {
		if ev.step == -1 || h.kept[ev.step].cost == 0 {
			continue
		}
		seen = append(seen, ev)
		p := algo.ParamsOf(ev.alg)
		w := p.Window.Microseconds()
		quantum := int64(1)
		if p.SubWindows > 0 {
			quantum = w / p.SubWindows
		}
		stamp := func(t time.Time) int64 { us := t.UnixMicro(); return us - us%quantum }
		var sum int64
		for _, b := range seen {
			if algo.FamilyOf(ev.alg.Kind()) == algo.FamilyFixedWindow {
				if b.at.UnixMicro()/w == ev.at.UnixMicro()/w {
					sum += h.kept[b.step].cost
				}
			} else if s := stamp(b.at); s > stamp(ev.at)-w && s <= stamp(ev.at) {
				sum += h.kept[b.step].cost
			}
		}
		if limit := algo.MaxCost(ev.alg); sum > limit {
			return fmt.Sprintf("its window at the admission of step %d holds %d admitted and not given back, over the limit %d then in force", ev.step+1, sum, limit)
		}
	}
	return ""
}

// bucketBound runs the naive token bucket, in exact rationals and in the
// order decided: tokens used drain at the rate the state was last written
// under, from the time it was written at; a decision under another rate
// count keeps them as they are, and writes; each admission not given back
// must fit the burst in force, a booking by its turn.
func (h *history) bucketBound(evs []event2) string {
	kept := new(big.Rat) // tokens used at last
	count, last := int64(0), int64(-1)
	for _, ev := range evs {
		p := algo.ParamsOf(ev.alg)
		period := p.Window.Microseconds()
		t := ev.eff.UnixMicro()
		used := new(big.Rat).Set(kept)
		if last >= 0 && t > last {
			drained := new(big.Rat).Mul(big.NewRat(count, period), new(big.Rat).SetInt64(t-last))
			if used.Sub(used, drained); used.Sign() < 0 {
				used.SetInt64(0)
			}
		}
		admitted := ev.step != -1 && h.kept[ev.step].cost > 0
		if !admitted && (count == 0 || p.Limit == count) {
			continue // an inspection, or a denial: nothing written
		}
		kept, count, last = used, p.Limit, max(t, last)
		if !admitted {
			continue
		}
		used.Add(used, new(big.Rat).SetInt64(h.kept[ev.step].cost))
		// By its turn, a booking's own tokens are all that may exceed
		// the burst at its decision; at the turn, none may.
		atTurn := new(big.Rat).Sub(used, new(big.Rat).Mul(big.NewRat(count, period), new(big.Rat).SetInt64(ev.at.UnixMicro()-ev.eff.UnixMicro())))
		if atTurn.Cmp(new(big.Rat).SetInt64(p.Burst)) > 0 {
			return fmt.Sprintf("the admission of step %d, at %v, makes %s tokens used of the burst of %d then in force: more than the bucket holds", ev.step+1, ev.at.Format(time.StampMicro), atTurn.FloatString(3), p.Burst)
		}
	}
	return ""
}

// replay: what was admitted and not given back replays on an empty key, in
// the order decided, each at the time it counts at, a booking booked again
// for its turn, and for the buckets every other decision at its time too
// (which converts a changed rate).
func (h *history) replay(evs []event2) string {
	var state algo.State
	bucket := algo.FamilyOf(evs[0].alg.Kind()) == algo.FamilyBucket
	for _, ev := range evs {
		cost := int64(0)
		if ev.step != -1 {
			cost = h.kept[ev.step].cost
		}
		var res algorithms.Result
		switch {
		case cost > 0 && ev.at.After(ev.eff):
			state, res, _ = algo.Reserve(ev.alg, state, ev.eff, cost, ev.at.Sub(ev.eff))
		case cost > 0:
			state, res = algo.Decide(ev.alg, state, ev.at, cost)
		case bucket:
			state, _ = algo.Decide(ev.alg, state, ev.eff, 0)
			continue
		default:
			continue
		}
		if !res.Allowed {
			return fmt.Sprintf("the admission of step %d (%d not given back, at %v) does not replay on an empty key with what else was admitted before it: more got through than if the refunded units had never been charged", ev.step+1, cost, ev.at.Format(time.StampMicro))
		}
	}
	return ""
}
