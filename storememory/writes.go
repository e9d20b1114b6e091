package storememory

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// Reserve books a request for key under alg (see store.Store.Reserve), under
// the key's shard lock.
func (s *Store) Reserve(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now)
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Reserve(alg, now, cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	return s.book(ctx, sk, &request{alg: alg, now: now, cost: cost}, maxWait, false)
}

// book books r's cost for key under its algorithm, checked, under the
// key's shard lock: with algo.Reserve for the algorithms that book, with algo.Decide
// otherwise (a lease of the fixed window). With lease, an admission makes
// a copy of the entry it leaves the key's mark (see Lease).
func (s *Store) book(
	ctx context.Context,
	sk store.Key,
	r *request,
	maxWait time.Duration,
	lease bool,
) (algorithms.Result, time.Duration, error) {
	alg, now, cost := r.alg, r.now, r.cost
	sk = s.kept(sk)
	ns, key := sk.Namespace, sk.Name
	id, once, err := requestID(ctx, cost)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	t := now.UnixNano()
	h := s.hash(ns, key)
	sh := s.shard(h)
	el := s.elapsed()
	sh.lock()
	defer sh.unlock()
	var k onceKey
	if once {
		k = onceKey{t: idOf(alg), op: onceDecide, key: sk.String(), id: id}
		if rec, ok := sh.once.find(k, el); ok {
			return rec.results[0], rec.delay, nil
		}
	}
	c := sh.find(h, ns, key, alg, s.seed, true)
	st := c.state(t)
	changed := changes(alg, st, now, cost)
	var (
		state algo.State
		res   algorithms.Result
		delay time.Duration
	)
	if algo.Reserves(alg) {
		state, res, delay = algo.Reserve(alg, st, now, cost, maxWait)
	} else {
		state, res = algo.Decide(alg, st, now, cost)
	}
	c.keep(state, res, t, el, cost, changed)
	if lease && res.Allowed {
		sh.mark(c, alg, sk.String(), el)
	}
	if once && res.Allowed {
		sh.once.keep(k, el, delay, res)
	}
	if sh.tick(false) {
		sh.sweep(el)
	}
	return res, delay, nil
}

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, under the key's shard lock (see store.Store.DecideSet). Every
// algorithm is first inspected as the request (a cost of -cost); the
// request is admitted when each would admit it alone, and only then is each
// charged.
func (s *Store) DecideSet(
	ctx context.Context,
	sk store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	now = storecheck.Now(now)
	sk = s.kept(sk)
	ns, key := sk.Namespace, sk.Name
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := storecheck.Set(algs, now, cost); err != nil {
		return nil, err
	}
	id, once, err := requestID(ctx, cost)
	if err != nil {
		return nil, err
	}
	t := now.UnixNano()
	h := s.hash(ns, key)
	sh := s.shard(h)
	el := s.elapsed()
	sh.lock()
	defer sh.unlock()
	var k onceKey
	if once {
		k = onceKey{t: idOf(algs[0]), op: onceSet, key: sk.String(), id: id}
		if rec, ok := sh.once.find(k, el); ok {
			return append([]algorithms.Result(nil), rec.results...), nil
		}
	}
	results := make([]algorithms.Result, len(algs))
	states := make([]algo.State, len(algs))
	cursors := make([]cursor, len(algs))
	// inspected are the states the inspections left, where they changed
	// them (a bucket converted from another rate count): written unless
	// the request then charges them.
	inspected := make([]algo.State, len(algs))
	all := true
	inspect := min(cost, -cost) // an inspection as the request
	for i, alg := range algs {
		// Each algorithm has its own table (CheckSet), so a packed state
		// unpacked here stays as it is until it is charged below.
		cursors[i] = sh.find(h, ns, key, alg, s.seed, cost > 0)
		states[i] = cursors[i].state(t)
		changed := changes(alg, states[i], now, inspect)
		var st algo.State
		st, results[i] = algo.Decide(alg, states[i], now, inspect)
		if changed {
			inspected[i] = st
		}
		all = all && results[i].Allowed
	}
	for i, alg := range algs {
		if cost <= 0 || !all && results[i].Allowed {
			// An inspection, or it would admit but the set does not: not
			// charged, and written only if the inspection changed it.
			if inspected[i] != nil {
				cursors[i].keep(inspected[i], results[i], t, el, 0, true)
			}
			continue
		}
		changed := changes(alg, states[i], now, cost)
		state, res := algo.Decide(alg, states[i], now, cost)
		cursors[i].keep(state, res, t, el, cost, changed)
		results[i] = res
	}
	if cost <= 0 {
		return results, nil
	}
	if once && all {
		kept := append([]algorithms.Result(nil), results...)
		sh.once.keep(k, el, 0, kept...)
		// Each other limit's state knows the admission too, so that a
		// refund of it with the ID forgets it (see refund).
		for _, alg := range algs[1:] {
			sh.once.keep(onceKey{t: idOf(alg), op: onceSet, key: sk.String(), id: id}, el, 0, kept...)
		}
	}
	if sh.tick(false) {
		sh.sweep(el)
	}
	return results, nil
}

// Refund gives back n units that a request admitted at time at was charged
// (see store.Store.Refund), under the key's shard lock.
func (s *Store) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	now = storecheck.Now(now)
	sk = s.kept(sk)
	ns, key := sk.Namespace, sk.Name
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckRefund(alg, now, at, n); err != nil {
		return algorithms.Result{}, err
	}
	id, once, err := requestID(ctx, n)
	if err != nil {
		return algorithms.Result{}, err
	}
	t := now.UnixNano()
	h := s.hash(ns, key)
	sh := s.shard(h)
	el := s.elapsed()
	sh.lock()
	defer sh.unlock()
	// A refund with an ID gives back the admission made with it (a
	// decision, a booking or a set's) while its record lasts, and forgets
	// it, so that the request retried is charged again; otherwise it
	// applies once, as a decision does.
	var k, admitted, inSet onceKey
	if once {
		k = onceKey{t: idOf(alg), op: onceRefund, key: store.Key{Namespace: ns, Name: key}.String(), id: id}
		admitted = onceKey{t: idOf(alg), op: onceDecide, key: store.Key{Namespace: ns, Name: key}.String(), id: id}
		inSet = onceKey{t: idOf(alg), op: onceSet, key: store.Key{Namespace: ns, Name: key}.String(), id: id}
		_, decided := sh.once.find(admitted, el)
		_, setDecided := sh.once.find(inSet, el)
		if !decided && !setDecided {
			if rec, ok := sh.once.find(k, el); ok {
				return rec.results[0], nil
			}
		}
	}
	c := sh.find(h, ns, key, alg, s.seed, false)
	state := c.state(t)
	if state == nil {
		_, res := algo.Decide(alg, nil, now, 0)
		return res, nil
	}
	state, changed := algo.Refund(alg, state, now, at, n)
	_, res := algo.Decide(alg, state, now, 0)
	if changed && c.t != nil {
		// Not c.keep: a refund's n is no request's cost.
		c.t.keep(&c, state, res, t, el)
	}
	if once && changed {
		// Kept as long as the refunded charge could count, for a retry of
		// the refund, however soon the state itself goes.
		sh.once.keepFor(k, el, 0, algo.QuotaOf(alg).Window, res)
		sh.once.forget(admitted)
		sh.once.forget(inSet)
	}
	return res, nil
}
