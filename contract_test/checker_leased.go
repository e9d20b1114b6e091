package contract

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// The model checker on a leasing layer (Leased). Three instances, each the
// store under test wrapped by lease.Wrap, share it, and a sequence's steps
// are made by any of them: the model checker's alphabet (admissions of any
// cost, peeks, refunds, resets, limit changes of every kind, sets, clock
// readings behind and ahead, request IDs, lost replies), with runs of
// requests of cost 1 from one instance, and the key's limit the same on
// every instance. Leases are booked, spent and given back as the layer
// decides, its sizer set to lease after a few requests. Bookings (Reserve,
// which go to the store unchanged) come in every other sequence of a
// bucket, in place of its refunds and cancellations: a refund made after
// a booking moves its turn, which no check on fixed times expresses, and
// the model checker on the store covers the two together.
//
// A local decision's Result is the lease's view, not the store's, so
// nothing is compared with the reference store. What is checked instead:
//
//   - every Result is in range, and an admission says what it charged;
//   - a retried write returns its first outcome;
//   - what was admitted and not given back never makes a window hold more
//     than its limit, nor a bucket's span more than Burst + span/T, each
//     admission at its At: a local one at the time it was spent
//     (checkSpent).
//
// That is the promise the layer makes (package lease): the fleet never
// admits more than the store would.

// leasedRule is the model_check rule under Leased, quoted in its failures.
const leasedRule = "random sequences on three instances leasing on one store, mixing admissions, runs of " +
	"cost 1, peeks, refunds or bookings, resets, changes of limit, sets, clock readings behind and " +
	"ahead, request IDs and lost replies: every Result in range; a retried write changes nothing; no " +
	"window over the limit in force, and no span of a bucket's admissions, each at the time spent, " +
	"over Burst + span/T"

// leasedInstances is how many instances share the store in a sequence.
const leasedInstances = 3

// leasedSequences is how many sequences the leased model checker runs per
// algorithm, leasedSampled on a Sampled target; RATEWISE_MODEL_SOAK
// multiplies both. Its sequences are longer than the model checker's, for
// keys to grow hot.
const (
	leasedSequences = 150
	leasedSampled   = 50
)

// leasedPolicy leases up to a third of a burst (Divisor = Instances) from
// one unit, sized on rates measured over two-second spans: a key leases
// once a few requests come to it within a second or two of each other.
func leasedPolicy(clock interface{ Now() time.Time }) lease.Policy {
	return lease.Policy{
		Instances: leasedInstances,
		RoundTrip: time.Second,
		Lifetime:  2,
		Divisor:   leasedInstances,
		Min:       1,
		Clock:     clock,
	}
}

// leasedModelCheck is the model_check rule under Leased.
func leasedModelCheck(e *env) {
	setup := newCheckerSetup(e.c, false)
	books := algo.Reserves(e.c.alg)
	_, lossy := e.inner.(replyLoser)
	sequences := e.sequenceCount(leasedSequences, leasedSampled)
	rng, replay := e.modelRNG()
	var tally leasedTally
	e.rule.text = leasedRule
	steps := e.checkSequences(sequences,
		func(seq int) []op { return setup.generateLeased(rng, 20+rng.IntN(40), books && seq%2 == 1, lossy) },
		func(ops []op, namespace string, keep bool) string {
			if keep {
				return e.runLeased(ops, namespace, setup, &tally)
			}
			return e.runLeased(ops, namespace, setup, &leasedTally{})
		},
		fmt.Sprintf("%d instances leasing on one store: ", leasedInstances),
		fmt.Sprintf("tiers: %v; partner %v; lease policy %+v; %s", setup.tiers, setup.partner, leasedPolicy(nil), replay))
	if lossy && tally.lost == 0 {
		e.fatalf("%d sequences on a store that can lose replies lost none: the retried writes were not checked", sequences)
	}
	// The logs and the calendar window lease nothing: the layer passes
	// their decisions on.
	leases := algo.FamilyOf(e.c.kind) != algo.FamilyLog && algo.FamilyOf(e.c.kind) != algo.FamilyCalendar
	if leases && (tally.booked.Load() == 0 || tally.local == 0) {
		e.fatalf(
			"%d sequences booked %d leases and decided %d requests from them: the leases were not checked",
			sequences,
			tally.booked.Load(),
			tally.local,
		)
	}
	e.t.Logf(
		"%d sequences, %d steps on %d instances, %d leases booked, %d decisions made from them, %d replies lost, on %s",
		sequences,
		steps,
		leasedInstances,
		tally.booked.Load(),
		tally.local,
		tally.lost,
		e.c.name,
	)
}

// leasedTally counts what the leased model checker exercised.
type leasedTally struct {
	booked atomic.Int64 // bookings of leases that reached the store
	direct atomic.Int64 // decisions of cost 1 that reached the store, not a lease's
	local  int          // decisions of cost 1 the layer made from a lease
	lost   int          // replies lost
}

// generateLeased draws a sequence of about n steps, each made by one of
// the instances (numbered from 1), a refund or a cancellation by the
// instance whose admission or booking it gives back. Half the admissions
// cost 1, the decisions that lease, and a third of those come in a run of
// a few from one instance.
func (cs checkerSetup) generateLeased(rng *rand.Rand, n int, books, lossy bool) []op {
	var ops []op
	index := map[int]int{} // a step of generate's sequence: its index in ops
	for i, o := range cs.generate(rng, n, draw{books: books, lossy: lossy}) {
		if books && (o.kind == opRefund || o.kind == opCancel) {
			// A refund or cancellation moves the turns of bookings
			// made after it: a sequence with bookings has none.
			o = op{kind: opPeek, key: o.key, n: 1}
		}
		switch o.kind {
		case opRefund, opCancel:
			o.ref = index[o.ref]
			o.inst = ops[o.ref].inst
			o.n = min(o.n, ops[o.ref].n) // which may have become 1 below
		default:
			o.inst = 1 + rng.IntN(leasedInstances)
		}
		if o.kind == opAllow && rng.IntN(2) == 0 {
			o.n = 1
		}
		index[i] = len(ops)
		ops = append(ops, o)
		if o.kind == opAllow && o.n == 1 && rng.IntN(3) == 0 {
			// A run of requests of cost 1 from one instance: a hot key,
			// which leases.
			for range 1 + rng.IntN(6) {
				ops = append(ops, op{kind: opAllow, key: o.key, n: 1, inst: o.inst})
			}
		}
	}
	return ops
}

// runLeased runs ops on leasedInstances instances that lease from the
// store under test, in namespace, and returns the first broken promise, or
// "", adding what it exercised to tally.
func (e *env) runLeased(ops []op, namespace string, setup checkerSetup, tally *leasedTally) string {
	ctx := context.Background()
	clock := ratewisetest.NewClock(e.c.start.Truncate(time.Second))
	inner := counting(e.inner, tally)
	tier := map[string]int{"a": 0, keyB: 0}
	sides := make([]*checkerSide, leasedInstances)
	for i := range sides {
		w, err := lease.Wrap(inner, leasedPolicy(clock))
		if err != nil {
			return err.Error()
		}
		defer w.Close(ctx)
		side, err := newCheckerSide(w, setup, namespace, clock)
		if err != nil {
			return err.Error()
		}
		side.tier = tier // one limit per key, whichever instance decides it
		sides[i] = side
	}
	loser, _ := e.inner.(replyLoser)
	h := newHistory(setup)
	for i, o := range ops {
		if (o.kind == opRefund || o.kind == opCancel) && h.resetSince(o.ref) {
			o = op{kind: opWait, inst: o.inst}
		}
		side := sides[max(o.inst, 1)-1]
		base := clock.Now()
		clock.Set(base.Add(o.off))
		now := clock.Now()
		var rctx context.Context = ctx
		if o.id {
			rctx = ratewise.WithRequestID(ctx, namespace+"/"+strconv.Itoa(i))
		}
		lose := o.lost && loser != nil
		if lose {
			loser.LoseNextReply()
		}
		direct := tally.direct.Load()
		got, gotErr := side.do(rctx, i, o)
		if lose && loser.KeepReplies() {
			tally.lost++
		}
		if o.kind == opAllow && o.n == 1 && !o.id && gotErr == nil && tally.direct.Load() == direct {
			tally.local++
		}
		if o.retried {
			again, againErr := side.do(rctx, i, o)
			if msg := same(again, againErr, got, gotErr); msg != "" {
				return fmt.Sprintf("step %d, retried with its request ID, did not return its first outcome: %s", i+1, msg)
			}
		}
		clock.Set(base)
		if o.kind == opWait {
			clock.Advance(o.d)
		}
		for _, s := range sides {
			if s == side {
				s.results, s.errs = append(s.results, got), append(s.errs, gotErr)
			} else {
				s.results, s.errs = append(s.results, nil), append(s.errs, nil)
			}
		}
		if msg := h.record(i, o, side, now, h.latest(side, o.key)); msg != "" {
			return fmt.Sprintf("step %d: %s", i+1, msg)
		}
	}
	return h.checkSpent()
}

// latest returns the latest time an admission on key's state under its
// limit was made at, for a booking's time: the store decides one behind
// it at it. (A booking's time is never after its turn: checkSpent takes
// the earlier of the two.)
func (h *history) latest(side *checkerSide, key string) time.Time {
	alg := side.setup.tiers[side.tier[key]]
	sh := h.states[keyOf(side.prefix+":"+key, alg)]
	var latest time.Time
	if sh != nil {
		for _, ev := range sh.events {
			if ev.step != -1 && ev.eff.After(latest) {
				latest = ev.eff
			}
		}
	}
	return latest
}

// checkSpent checks, for each state, that what was admitted and not given
// back never made any window exceed the limit in force, each decision at
// its At: a local one at the time its unit was spent. That is the layer's
// promise: a leased unit is spent only when the store would have admitted
// it.
//
//   - The windows (fixed window, logs) are checked as on a direct store,
//     in the order decided (history.windowBound): a lease's units count in
//     the window they were booked and spent in.
//   - The buckets are checked on the times admissions count at, whatever
//     the order they were decided in (a lease's units were charged when it
//     was booked, before decisions made between its booking and their
//     spending): over each stretch of decisions under one limit, every
//     span [a, b] holds at most Burst + (b-a)/T of what was admitted and
//     not given back (bucketSpent). A stretch is checked from an empty
//     bucket: what carries over a change of limit is the model checker's
//     to check, on the store itself.
//
// A Reset starts the check afresh, as on a direct store, with no
// allowance: the store (a store.Store.Lease) puts back the state its latest
// lease left, in which every unit other instances' leases still hold is
// charged, so what they spend after it fits beside what the key admits.
func (h *history) checkSpent() string {
	for k, sh := range h.states {
		if len(sh.events) == 0 {
			continue
		}
		limits := make([]int64, len(sh.events))
		for i, ev := range sh.events {
			limits[i] = algo.MaxCost(ev.alg)
		}
		var msg string
		if algo.FamilyOf(sh.events[0].alg.Kind()) == algo.FamilyBucket {
			msg = h.bucketSpent(sh.events, limits)
		} else {
			msg = h.windowBoundOver(sh.events, limits)
		}
		if msg != "" {
			return fmt.Sprintf("%s on %s: %s", k.kind, k.scope, msg)
		}
	}
	return ""
}

// bucketSpent checks evs, decisions on one bucket state in the order
// decided, in stretches under one algorithm value: the admissions of a
// stretch not given back, each at its At, sorted by it, run through the
// naive token bucket from empty, and each must fit limits[i]. With the
// times in order, the naive bucket never passing the burst is every span
// [a, b] holding at most Burst + (b-a)/T.
func (h *history) bucketSpent(evs []event2, limits []int64) string {
	for start := 0; start < len(evs); {
		alg := evs[start].alg
		end := start + 1
		for end < len(evs) && evs[end].alg == alg {
			end++
		}
		var run []int
		for i := start; i < end; i++ {
			if evs[i].step != -1 && h.kept[evs[i].step].cost > 0 {
				run = append(run, i)
			}
		}
		slices.SortStableFunc(run, func(a, b int) int { return evs[a].at.Compare(evs[b].at) })
		p := algo.ParamsOf(alg)
		rate := big.NewRat(p.Limit, p.Window.Microseconds()) // tokens per µs
		used := new(big.Rat)
		var last int64
		for j, i := range run {
			ev := evs[i]
			t := ev.at.UnixMicro()
			if j > 0 {
				if used.Sub(used, new(big.Rat).Mul(rate, new(big.Rat).SetInt64(t-last))); used.Sign() < 0 {
					used.SetInt64(0)
				}
			}
			last = t
			used.Add(used, new(big.Rat).SetInt64(h.kept[ev.step].cost))
			if used.Cmp(new(big.Rat).SetInt64(limits[i])) > 0 {
				return fmt.Sprintf(
					"the admission of step %d, counted at %v, makes %s tokens used of the burst of %d then in force: more "+
						"than the bucket holds",
					ev.step+1,
					ev.at.Format(time.StampMicro),
					used.FloatString(3),
					limits[i],
				)
			}
		}
		start = end
	}
	return ""
}

// counting returns s, counting in tally the bookings of leases and the
// decisions of cost 1 that reach it. It keeps what s can do, as every
// store that wraps another does (store.Store.Capabilities).
func counting(s store.Store, tally *leasedTally) store.Store {
	return countingStore{Store: s, tally: tally}
}

type countingStore struct {
	store.Store
	tally *leasedTally
}

// count counts a write on ctx: a lease's booking by its request ID.
func (c countingStore) count(ctx context.Context, cost int64) {
	if id, ok := requestid.From(ctx); ok && strings.HasPrefix(id, "lease:") {
		c.tally.booked.Add(1)
	} else if cost == 1 {
		c.tally.direct.Add(1)
	}
}

func (c countingStore) Decide(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	c.count(ctx, cost)
	return c.Store.Decide(ctx, key, alg, now, cost)
}

func (c countingStore) Reserve(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	c.count(ctx, 0)
	return c.Store.Reserve(ctx, key, alg, now, cost, maxWait)
}

func (c countingStore) Lease(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	c.count(ctx, 0)
	return c.Store.Lease(ctx, key, alg, now, cost, maxWait)
}

func (c countingStore) Refund(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	return c.Store.Refund(ctx, key, alg, now, at, n)
}

func (c countingStore) DecideSet(
	ctx context.Context,
	key store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	return c.Store.DecideSet(ctx, key, algs, now, cost)
}
