package contract

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// seqRun is one sequence as the model checker runs it: the store under
// test's side, the reference's, and what the sequence has shown so far.
type seqRun struct {
	e          *env
	ops        []op
	ids        []string // each step's request ID, or ""
	clock      *ratewisetest.Clock
	sut        *checkerSide
	ref        *replayer
	h          *history
	loser      replyLoser     // nil for a store that cannot lose a reply
	expiry     expiryAdvancer // nil but in a sequence that moves it
	serverTime bool
	unknown    map[int]bool // steps whose outcome on the store is unknown (a reply lost)
	tally      seqTally
}

// seqTally is what a sequence exercised.
type seqTally struct {
	lost, unknown, rounds, inRounds int
	idle                            time.Duration // how far the store's expiry clock moved
}

// runSequence runs the sequence ops, on the store under test and on a fresh
// referenceStore, in namespace, and returns the first broken promise, or
// "", and what it exercised.
func (e *env) runSequence(ops []op, namespace string, setup checkerSetup) (string, seqTally) {
	start := e.c.start.Truncate(time.Second)
	r := &seqRun{e: e, ops: ops, ids: requestIDs(ops), clock: ratewisetest.NewClock(start),
		h: newHistory(setup), serverTime: e.cfg.storeClock, unknown: map[int]bool{}}
	r.loser, _ = e.store.(replyLoser)
	// A sequence with no clock reading off the clock moves the store's
	// expiry clock with its waits: expiry runs relative to it, so a
	// reading behind the latest could find gone a state that still
	// counts at it.
	if !slices.ContainsFunc(ops, func(o op) bool { return o.off != 0 }) {
		r.expiry = e.expiryClock()
	}
	sut, err := newCheckerSide(e.store, setup, namespace, r.clock)
	if err != nil {
		return err.Error(), r.tally
	}
	sut.results, sut.errs = make([]any, len(ops)), make([]error, len(ops))
	r.sut = sut
	if r.ref, err = newReplayer(setup, namespace, start, len(ops)); err != nil {
		return err.Error(), r.tally
	}
	for first := 0; first < len(ops); {
		// A round is the steps marked to be made at once with the one
		// before, of the kinds that may be: a shrunk sequence may have
		// marked others.
		n := 1
		for first+n < len(ops) && ops[first+n].par && joins(ops[first]) && joins(ops[first+n]) &&
			!(e.cfg.lostFails && (ops[first].lost || ops[first+n].lost)) {
			n++
		}
		var msg string
		if n == 1 {
			msg = r.step(first)
		} else {
			msg = r.round(first, n)
		}
		if msg != "" {
			return msg, r.tally
		}
		first += n
	}
	if msg := r.finalPeeks(); msg != "" {
		return msg, r.tally
	}
	return r.h.check(), r.tally
}

// requestIDs returns each step's request ID, "" for a step without one:
// on key "a", "q:once:" and a number; on keyB, the number of a step on "a"
// that had one, each once, or a number of its own: what a store that joined
// a key, ":once:" and an ID would spell alike for the two keys.
func requestIDs(ops []op) []string {
	ids := make([]string, len(ops))
	var unpaired []int
	for i, o := range ops {
		switch {
		case !o.id:
		case o.key == "a":
			ids[i] = "q:once:" + strconv.Itoa(i)
			unpaired = append(unpaired, i)
		case len(unpaired) > 0:
			ids[i], unpaired = strconv.Itoa(unpaired[0]), unpaired[1:]
		default:
			ids[i] = "b" + strconv.Itoa(i)
		}
	}
	return ids
}

// context returns the context of step i: with its request ID, if it has
// one.
func (r *seqRun) context(i int) context.Context {
	if r.ids[i] == "" {
		return context.Background()
	}
	return ratewise.WithRequestID(context.Background(), r.ids[i])
}

// skipped returns step i as it is run: a refund or a cancellation of an
// admission its key's Reset has since forgotten, or whose outcome on the
// store is unknown, is not made (Limiter.Refund, Reservation.Cancel), on
// either side: a wait of nothing.
func (r *seqRun) skipped(i int) op {
	o := r.ops[i]
	if (o.kind == opRefund || o.kind == opCancel) && (r.h.resetSince(o.ref) || r.unknown[o.ref]) {
		return op{kind: opWait, par: o.par}
	}
	return o
}

// outcome is what a step returned on the store under test.
type outcome struct {
	got any
	err error
}

// step runs step i alone, on both sides, and checks it.
func (r *seqRun) step(i int) string {
	o := r.skipped(i)
	base := r.clock.Now()
	r.clock.Set(base.Add(o.off))
	reading := r.clock.Now()
	lose := o.lost && r.loser != nil
	if lose {
		r.loser.LoseNextReply()
	}
	got, gotErr := r.sut.do(r.context(i), i, o)
	lost := lose && r.loser.KeepReplies()
	out := r.learn(i, o, outcome{got, gotErr}, lost)
	var again outcome
	if o.retried && !r.unknown[i] {
		again.got, again.err = r.sut.do(r.context(i), i, o)
	}
	r.clock.Set(base)
	if o.kind == opWait {
		r.wait(o.d)
	}
	now := r.decidedAt(o, out, reading)
	want, wantErr := r.ref.apply(applied{i: i, o: o, now: now, id: r.ids[i]})
	if o.retried && !r.unknown[i] {
		// The retry returns the first outcome, on the reference too; but a
		// denial, not kept, is decided again, on a store's own clock at a
		// later time.
		if !r.serverTime {
			if msg := same(again.got, again.err, out.got, out.err); msg != "" {
				return fmt.Sprintf("step %d, retried with its request ID, did not return its first outcome: %s", i+1, msg)
			}
		}
		againWant, againErr := r.ref.apply(
			applied{i: i, o: o, now: r.decidedAt(o, again, reading), id: r.ids[i], again: true},
		)
		if msg := same(again.got, again.err, againWant, againErr); msg != "" {
			return fmt.Sprintf(
				"step %d, retried with its request ID, gave another outcome than the reference store: %s",
				i+1,
				msg,
			)
		}
	}
	if !r.unknown[i] {
		if msg := same(out.got, out.err, want, wantErr); msg != "" {
			return fmt.Sprintf("step %d gave another outcome than the reference store: %s", i+1, msg)
		}
	}
	return r.record(i, o, out, now)
}

// round runs the n steps from first at once on the store under test, then
// looks for an order of them in which the reference store gives each the
// outcome the store did, and records them in that order.
func (r *seqRun) round(first, n int) string {
	r.tally.rounds++
	r.tally.inRounds += n
	reading := r.clock.Now()
	steps := make([]op, n)
	lose := false
	for j := range steps {
		steps[j] = r.skipped(first + j)
		lose = lose || steps[j].lost && r.loser != nil
	}
	for _, o := range steps {
		if o.kind == opSet {
			// The side keeps its Stacks in a map: made here, before the
			// goroutines read it.
			if _, err := r.sut.set(r.sut.tier[o.key]); err != nil {
				return fmt.Sprintf("step %d: %v", first+1, err)
			}
		}
	}
	if lose {
		r.loser.LoseNextReply()
	}
	outs := make([]outcome, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for j, o := range steps {
		wg.Go(func() {
			<-start
			outs[j].got, outs[j].err = r.sut.do(r.context(first+j), first+j, o)
		})
	}
	close(start)
	wg.Wait()
	lost := lose && r.loser.KeepReplies()
	for j, o := range steps {
		outs[j] = r.learn(first+j, o, outs[j], lost)
	}
	nows := make([]time.Time, n)
	for j, o := range steps {
		nows[j] = r.decidedAt(o, outs[j], reading)
	}
	order, msg := r.linearize(first, steps, outs, nows)
	if msg != "" {
		return msg
	}
	for _, j := range order {
		r.ref.apply(applied{i: first + j, o: steps[j], now: nows[j], id: r.ids[first+j]})
	}
	for _, j := range order {
		if msg := r.record(first+j, steps[j], outs[j], nows[j]); msg != "" {
			return msg
		}
	}
	return ""
}

// learn returns the outcome of step i, o, which returned out: after a lost
// reply, a step that failed with store.ErrUnavailable did so because of
// it, and was decided all the same; the checker retries one that carries a
// request ID with it, as its caller would, for its first outcome, and
// marks the outcome of one that does not unknown.
func (r *seqRun) learn(i int, o op, out outcome, lost bool) outcome {
	if lost {
		r.tally.lost++
	}
	if !lost || !errors.Is(out.err, store.ErrUnavailable) {
		r.sut.results[i], r.sut.errs[i] = out.got, out.err
		return out
	}
	if r.ids[i] != "" && o.kind != opCancel {
		out.got, out.err = r.sut.do(r.context(i), i, o)
		r.sut.results[i], r.sut.errs[i] = out.got, out.err
		return out
	}
	r.unknown[i] = true
	r.tally.unknown++
	return out
}

// decidedAt returns the time step o was decided at: the clock reading it
// was made with; on a store's own clock, what its outcome says, and the
// reading for a step that returns no time.
func (r *seqRun) decidedAt(o op, out outcome, reading time.Time) time.Time {
	if !r.serverTime || out.err != nil {
		return reading
	}
	var at time.Time
	switch g := out.got.(type) {
	case ratewise.Result:
		at = g.At
	case ratewise.MultiResult:
		for _, res := range g.Results {
			if at.IsZero() || res.At.Before(at) {
				at = res.At
			}
		}
	case *ratewise.Reservation:
		at = g.Result().At.Add(-g.Delay())
	case leased:
		at = g.res.At.Add(-g.delay)
	}
	if at.IsZero() {
		return r.ref.last
	}
	return at
}

// linearize returns an order of the round's steps (indices into steps) in
// which the reference store, from where the sequence stands, gives each
// the outcome the store under test did, or why there is none. Steps on
// different keys touch different states, and may go in any order between
// each other: it orders each key's steps apart, trying the order they
// were drawn in first, then searching, each order on snapshots of the
// reference. On a store's own clock, a key's steps are decided in the
// order of the times they were decided at, which the search keeps.
func (r *seqRun) linearize(first int, steps []op, outs []outcome, nows []time.Time) ([]int, string) {
	matches := func(f *replayer, j int) bool {
		want, wantErr := f.apply(applied{i: first + j, o: steps[j], now: nows[j], id: r.ids[first+j]})
		return r.unknown[first+j] || alike(outs[j].got, outs[j].err, want, wantErr)
	}
	var order []int
	base := r.ref.snapshot() // the reference as the round found it, then with each key's steps placed
	for _, key := range []string{"a", keyB} {
		var group []int
		for j, o := range steps {
			if o.key == key || o.kind == opWait && key == "a" {
				group = append(group, j)
			}
		}
		if len(group) == 0 {
			continue
		}
		placed, f, tries := r.order(base, group, nows, matches)
		if placed == nil {
			return nil, r.unordered(first, steps, outs, nows, key, tries)
		}
		order, base = append(order, placed...), f
	}
	return order, ""
}

// maxTries is how many steps the search for one key's order in a round
// tries before it gives up.
const maxTries = 20_000

// order returns an order of group (indices into the round's steps) in
// which each step matches on base, and base with them applied in that
// order; nil and how many it tried if there is none.
func (r *seqRun) order(
	base *replayer,
	group []int,
	nows []time.Time,
	matches func(*replayer, int) bool,
) ([]int, *replayer, int) {
	f := base.snapshot()
	for k, j := range group {
		if !matches(f, j) {
			break
		}
		if k == len(group)-1 {
			return group, f, 0
		}
	}
	tries := 0
	var found []int
	var foundRef *replayer
	var search func(f *replayer, placed []int) bool
	search = func(f *replayer, placed []int) bool {
		if len(placed) == len(group) {
			found, foundRef = placed, f
			return true
		}
		for _, j := range group {
			if slices.Contains(placed, j) {
				continue
			}
			if r.serverTime && len(placed) > 0 && nows[j].Before(nows[placed[len(placed)-1]]) {
				continue
			}
			if tries++; tries > maxTries {
				return false
			}
			g := f.snapshot()
			if !matches(g, j) {
				continue
			}
			if search(g, append(slices.Clone(placed), j)) {
				return true
			}
		}
		return false
	}
	if search(base, nil) {
		return found, foundRef, tries
	}
	return nil, nil, tries
}

// unordered says that no order of key's steps in the round gives the
// store's outcomes on the reference, showing the order they were drawn in.
func (r *seqRun) unordered(first int, steps []op, outs []outcome, nows []time.Time, key string, tries int) string {
	var b strings.Builder
	fmt.Fprintf(
		&b,
		"the %d steps %d to %d, made at once, gave outcomes on %q that no order of them gives on the reference store",
		len(steps),
		first+1,
		first+len(steps),
		key,
	)
	if tries > maxTries {
		fmt.Fprintf(&b, " (the search stopped after %d tries)", maxTries)
	}
	b.WriteString(": in the order drawn, alone,")
	f := r.ref.snapshot()
	for j, o := range steps {
		if o.key != key {
			continue
		}
		want, wantErr := f.apply(applied{i: first + j, o: o, now: nows[j], id: r.ids[first+j]})
		if r.unknown[first+j] {
			fmt.Fprintf(&b, "\n    step %d (%v): outcome unknown", first+j+1, o)
			continue
		}
		fmt.Fprintf(&b, "\n    step %d (%v): %s", first+j+1, o, orSame(same(outs[j].got, outs[j].err, want, wantErr)))
	}
	return b.String()
}

func orSame(msg string) string {
	if msg == "" {
		return "the same"
	}
	return msg
}

// record notes step i, o, decided at now, in the history, from the store
// under test's outcome, or the reference's when the store's is unknown.
func (r *seqRun) record(i int, o op, out outcome, now time.Time) string {
	side := r.sut
	if r.unknown[i] {
		side = r.ref.side
	}
	if msg := r.h.record(i, o, side, now, r.ref.latestBefore[i]); msg != "" {
		return fmt.Sprintf("step %d: %s", i+1, msg)
	}
	return ""
}

// wait moves the clock on by d, and the store's expiry clock with it, in
// a sequence that moves it.
func (r *seqRun) wait(d time.Duration) {
	r.clock.Advance(d)
	if r.expiry != nil {
		r.expiry.AdvanceExpiry(d)
		r.tally.idle += d
	}
}

// finalPeeks peeks at every state the sequence may have touched, on both
// sides: what the store holds at the end is what the reference holds,
// whether or not a step's Result showed it. One peek per state: under the
// key's limit for its own, under the first tier of each other kind and
// scope, and under the partner.
func (r *seqRun) finalPeeks() string {
	ctx := context.Background()
	setup := r.sut.setup
	for _, key := range []string{"a", keyB} {
		current := setup.tiers[r.ref.side.tier[key]]
		algs := []algorithms.Algorithm{current, setup.partner}
		for _, t := range setup.tiers {
			if !slices.ContainsFunc(algs, func(a algorithms.Algorithm) bool { return sameState(a, t) }) {
				algs = append(algs, t)
			}
		}
		for _, alg := range algs {
			got, gotErr := r.sut.peek(ctx, key, alg)
			now := r.decidedAt(op{kind: opPeek}, outcome{got, gotErr}, r.clock.Now())
			r.ref.clock.Set(now)
			want, wantErr := r.ref.side.peek(ctx, key, alg)
			if msg := same(got, gotErr, want, wantErr); msg != "" {
				return fmt.Sprintf(
					"at the end, a peek of %q under %v gave another outcome than the reference store: %s",
					key,
					alg,
					msg,
				)
			}
		}
	}
	return ""
}

// replayer is the reference store's side of a sequence, of which the
// checker can take snapshots, to try orders of a round's steps on.
type replayer struct {
	setup     checkerSetup
	namespace string
	clock     *ratewisetest.Clock
	side      *checkerSide
	store     *refStore
	last      time.Time // the time the last step applied was decided at
	// latestBefore is, for each step applied, the latest time the
	// reference's state of its key held under its limit before it (see
	// history.record).
	latestBefore map[int]time.Time
}

// applied is a step as applied to the reference: made at now, with its
// request ID, again when its caller retried it.
type applied struct {
	i     int
	o     op
	now   time.Time
	id    string
	again bool
}

func newReplayer(setup checkerSetup, namespace string, start time.Time, steps int) (*replayer, error) {
	return newReplayerOn(referenceStore().(*refStore), setup, namespace, start, steps)
}

func newReplayerOn(rs *refStore, setup checkerSetup, namespace string, now time.Time, steps int) (*replayer, error) {
	r := &replayer{
		setup:        setup,
		namespace:    namespace,
		clock:        ratewisetest.NewClock(now),
		store:        rs,
		last:         now,
		latestBefore: map[int]time.Time{},
	}
	side, err := newCheckerSide(rs, setup, namespace, r.clock)
	if err != nil {
		return nil, err
	}
	side.results, side.errs = make([]any, steps), make([]error, steps)
	r.side = side
	return r, nil
}

// apply makes step a on the reference and returns what it returned.
func (r *replayer) apply(a applied) (any, error) {
	r.clock.Set(a.now)
	r.last = a.now
	if !a.again {
		r.latestBefore[a.i] = r.side.latest(a.o.key)
	}
	ctx := context.Background()
	if a.id != "" {
		ctx = ratewise.WithRequestID(ctx, a.id)
	}
	got, err := r.side.do(ctx, a.i, a.o)
	if !a.again {
		r.side.results[a.i], r.side.errs[a.i] = got, err
	}
	return got, err
}

// snapshot returns a replayer that holds what r holds, on a snapshot of
// its store, for a search to apply steps to. A booking it holds stays one
// of r's: no step that cancels one is tried on a snapshot (see joins).
func (r *replayer) snapshot() *replayer {
	f, err := newReplayerOn(r.store.snapshot(), r.setup, r.namespace, r.clock.Now(), len(r.side.results))
	if err != nil {
		panic(err) // r was made with the same setup
	}
	f.last = r.last
	copy(f.side.results, r.side.results)
	copy(f.side.errs, r.side.errs)
	f.side.tier = maps.Clone(r.side.tier)
	return f
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
	if alike(got, gotErr, want, wantErr) {
		return ""
	}
	if gotErr != nil || wantErr != nil {
		return fmt.Sprintf("error %v, the reference %v", gotErr, wantErr)
	}
	switch g := got.(type) {
	case leased:
		w := want.(leased)
		return fmt.Sprintf("a lease %+v (delay %v), the reference %+v (delay %v)", g.res, g.delay, w.res, w.delay)
	case *ratewise.Reservation:
		w := want.(*ratewise.Reservation)
		return fmt.Sprintf("a booking %+v (delay %v), the reference %+v (delay %v)",
			g.Result(), g.Delay(), w.Result(), w.Delay())
	}
	return fmt.Sprintf("%+v, the reference %+v", got, want)
}

// alike reports whether two outcomes of one step are the same, as same
// does, without saying how they differ: the search for an order of a
// round's steps asks it of many that differ.
func alike(got any, gotErr error, want any, wantErr error) bool {
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && errClass(gotErr) != errClass(wantErr) {
		return false
	}
	if gotErr != nil {
		return true
	}
	switch g := got.(type) {
	case ratewise.Result:
		return g == want.(ratewise.Result)
	case ratewise.MultiResult:
		w := want.(ratewise.MultiResult)
		return g.Allowed == w.Allowed && g.Binding == w.Binding && g.RetryAfter == w.RetryAfter &&
			equalResults(g.Results, w.Results)
	case leased:
		return g == want.(leased)
	case *ratewise.Reservation:
		w := want.(*ratewise.Reservation)
		return g.Result().Allowed == w.Result().Allowed && g.Delay() == w.Delay() && g.Result() == w.Result()
	}
	return true
}

// errClass is the sentinel an error of the checker's steps wraps.
func errClass(err error) error {
	for _, s := range []error{
		ratewise.ErrNotAdmitted, algorithms.ErrInvalidCost, algorithms.ErrCostExceedsLimit,
		store.ErrUnavailable, store.ErrMaybeDecided, store.ErrUnsupported,
	} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// modelCheck is the model_check rule.
func modelCheck(e *env) {
	if e.cfg.leased {
		leasedModelCheck(e)
		return
	}
	setup := newCheckerSetup(e.c, e.cfg.storeClock)
	leases := true // every store books leases (store.Store.Lease)
	_, lossy := e.store.(replyLoser)
	// On a store's own clock, the time a step whose reply was lost was
	// decided at is unknown where the step then fails (LostRepliesFail):
	// none is lost there. Where the client sends it again (Redis), the
	// step returns its first outcome, with the time it was decided at.
	lossy = lossy && !(e.cfg.storeClock && e.cfg.lostFails)
	d := draw{
		books:  algo.Reserves(e.c.alg),
		leases: leases,
		lossy:  lossy,
		// On a store's own clock, only steps alone lose a reply: in a
		// round, the reply lost may be another step's, one with a request
		// ID whose denial moved the key's latest time, which the store
		// does not record and its resend moves again (see lossOK).
		lostInRounds: !e.cfg.lostFails && !e.cfg.storeClock,
		rounds:       true,
		serverTime:   e.cfg.storeClock,
	}
	sequences := e.sequenceCount(checkerSequences, sampledSequences)
	rng, replay := e.modelRNG()
	batcher, _ := e.inner.(batcher)
	var batchesBefore, batchedBefore int64
	if batcher != nil {
		batchesBefore, batchedBefore = batcher.Batches()
	}
	var tally seqTally
	leaseOps := 0
	steps := e.checkSequences(sequences,
		func(seq int) []op {
			d.idle = e.expiryClock() != nil && seq%2 == 1
			ops := setup.generate(rng, 6+rng.IntN(20), d)
			for _, o := range ops {
				if o.kind == opLease {
					leaseOps++
				}
			}
			return ops
		},
		func(ops []op, namespace string, keep bool) string {
			msg, t := e.runSequence(ops, namespace, setup)
			if keep {
				tally.lost += t.lost
				tally.unknown += t.unknown
				tally.rounds += t.rounds
				tally.inRounds += t.inRounds
				tally.idle += t.idle
			}
			return msg
		},
		"", fmt.Sprintf("tiers: %v; partner %v; %s", setup.tiers, setup.partner, replay))
	if lossy && tally.lost == 0 {
		e.fatalf("%d sequences on a store that can lose replies lost none: the retried writes were not checked", sequences)
	}
	if leases && leaseOps == 0 {
		e.fatalf("%d sequences on a store that leases made no Lease", sequences)
	}
	var batches, batched int64
	if batcher != nil {
		batches, batched = batcher.Batches()
		batches, batched = batches-batchesBefore, batched-batchedBefore
	}
	if e.expiryClock() != nil && tally.idle == 0 {
		e.fatalf("%d sequences moved the store's expiry clock by nothing: no state expired within one", sequences)
	}
	if e.cfg.coalesced && batches == 0 {
		e.fatalf(
			"%d sequences, %d rounds of %d steps made at once, formed no batch on a store that shares round trips: "+
				"its default path was not checked",
			sequences,
			tally.rounds,
			tally.inRounds,
		)
	}
	e.t.Logf(
		"%d sequences, %d steps, %d rounds of %d steps at once, %d batches of %d decisions, %d leases, %d replies "+
			"lost (%d outcomes unknown), the store's expiry clock moved %v, on %s; %s",
		sequences,
		steps,
		tally.rounds,
		tally.inRounds,
		batches,
		batched,
		leaseOps,
		tally.lost,
		tally.unknown,
		tally.idle,
		e.c.name,
		replay,
	)
}

// expiryClock returns the clock the store's expiry follows, if the test
// moves it: ExpiryFollows's, or the store's own (an AdvanceExpiry method).
func (e *env) expiryClock() expiryAdvancer {
	if e.cfg.expiry != nil {
		return e.cfg.expiry
	}
	c, _ := e.store.(expiryAdvancer)
	return c
}

// modelSeed is the seed of the model checkers' sequences in this run:
// RATEWISE_MODEL_SEED, to draw a run's sequences again, or a new one.
// Each rule draws from it and its own name (target and algorithm), so
// that every run, algorithm and target draws sequences of its own.
var modelSeed = func() uint64 {
	if v, err := strconv.ParseUint(os.Getenv("RATEWISE_MODEL_SEED"), 10, 64); err == nil {
		return v
	}
	return rand.Uint64()
}()

// modelRNG returns the rule's source of sequences, and how to draw them
// again, for failure messages and logs.
func (e *env) modelRNG() (*rand.Rand, string) {
	h := fnv.New64a()
	h.Write([]byte(e.t.Name()))
	parts := strings.Split(e.t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return rand.New(rand.NewPCG(modelSeed, h.Sum64())),
		fmt.Sprintf(
			"seed %d (RATEWISE_MODEL_SEED=%d go test -run '%s' ./contract_test draws these sequences again; the steps "+
				"made at once may interleave otherwise)",
			modelSeed,
			modelSeed,
			strings.Join(parts, "/"),
		)
}

// sequenceCount is how many sequences a model checker runs for each
// algorithm: full, or sampled on a Sampled target, times
// RATEWISE_MODEL_SOAK.
func (e *env) sequenceCount(full, sampled int) int {
	n := full
	if e.cfg.sampled {
		n = sampled
	}
	if soak, err := strconv.Atoi(os.Getenv("RATEWISE_MODEL_SOAK")); err == nil && soak > 1 {
		n *= soak
	}
	return n
}

// checkSequences runs n sequences, each drawn by generate and run by run,
// which returns the first promise it broke, or "" (keep is false on the
// runs made again, whose tallies the caller leaves out). It fails the rule
// on the first sequence that breaks one, shrunk to its shortest, said
// after what and before where; a sequence whose state outlived its keys'
// time to live in real time (a Redis server's expiry, ExpiryGrace past it)
// is run again first. It returns how many steps the sequences had.
func (e *env) checkSequences(
	n int,
	generate func(seq int) []op,
	run func(ops []op, namespace string, keep bool) string,
	what, where string,
) int {
	steps := 0
	for seq := range n {
		ops := generate(seq)
		steps += len(ops)
		realStart := time.Now()
		msg := run(ops, e.checkerNamespace(seq), true)
		if msg == "" {
			continue
		}
		if time.Since(realStart) > e.cfg.grace && e.cfg.grace > 0 {
			if run(ops, e.checkerNamespace(seq)+"r", false) == "" {
				continue
			}
		}
		shrunk, why := e.shrink(ops, msg, func(cand []op) string {
			return run(cand, e.checkerNamespace(len(cand)), false)
		})
		var b strings.Builder
		fmt.Fprintf(
			&b,
			"%ssequence %d of %d (%d steps) broke it; shrunk to %d steps, which break it with: %s\n",
			what,
			seq+1,
			n,
			len(ops),
			len(shrunk),
			why,
		)
		for i, o := range shrunk {
			fmt.Fprintf(&b, "  %2d. %v\n", i+1, o)
		}
		fmt.Fprintf(&b, "  %s", where)
		e.fatalf("%s", b.String())
	}
	return steps
}

// checkerNamespace returns a namespace of the rule's own, new on each
// call, for a sequence's keys.
func (e *env) checkerNamespace(seq int) string {
	e.n++
	return strings.ReplaceAll(fmt.Sprintf("mc.%s.%s.%d.%d", runID, e.t.Name(), seq, e.n), ":", ".")
}

// shrink returns the shortest sequence it finds that still breaks a
// promise, by dropping steps (and the steps that refer to them) and
// simplifying the rest, and what it breaks; run runs a sequence and
// returns what it broke, or "".
func (e *env) shrink(ops []op, msg string, run func([]op) string) ([]op, string) {
	fails := func(cand []op) (string, bool) {
		m := run(cand)
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
			func(o *op) { o.par = false },
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
