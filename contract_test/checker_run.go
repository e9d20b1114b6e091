package contract

import (
	"context"
	"errors"
	"fmt"
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
	case leased:
		if w := want.(leased); g != w {
			return fmt.Sprintf("a lease %+v (delay %v), the reference %+v (delay %v)", g.res, g.delay, w.res, w.delay)
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
	if e.cfg.leased {
		leasedModelCheck(e)
		return
	}
	setup := newCheckerSetup(e.c)
	books := algo.Reserves(e.c.alg)
	_, leases := e.store.(store.Leaser)
	_, lossy := e.store.(ReplyLoser)
	sequences := e.sequenceCount(checkerSequences, sampledSequences)
	rng := rand.New(rand.NewPCG(23, uint64(len(e.c.name))))
	lost, leaseOps := 0, 0
	steps := e.checkSequences(sequences,
		func(int) []op {
			ops := setup.generate(rng, 6+rng.IntN(20), books, leases, lossy)
			for _, o := range ops {
				if o.kind == opLease {
					leaseOps++
				}
			}
			return ops
		},
		func(ops []op, namespace string, keep bool) string {
			msg, n := e.runSequence(ops, namespace, setup)
			if keep {
				lost += n
			}
			return msg
		},
		"", fmt.Sprintf("tiers: %v; partner %v", setup.tiers, setup.partner))
	if lossy && lost == 0 {
		e.fatalf("%d sequences on a store that can lose replies lost none: the retried writes were not checked", sequences)
	}
	if leases && leaseOps == 0 {
		e.fatalf("%d sequences on a store that leases made no Lease", sequences)
	}
	e.t.Logf("%d sequences, %d steps, %d leases, %d replies lost, on %s", sequences, steps, leaseOps, lost, e.c.name)
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
func (e *env) checkSequences(n int, generate func(seq int) []op, run func(ops []op, namespace string, keep bool) string, what, where string) int {
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
		fmt.Fprintf(&b, "%ssequence %d of %d (%d steps) broke it; shrunk to %d steps, which break it with: %s\n", what, seq+1, n, len(ops), len(shrunk), why)
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
