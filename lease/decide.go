package lease

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	core "github.com/ratewise/ratewise/internal/lease"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// Decide decides a request of cost 1 without a request ID under the token
// bucket, GCRA or the fixed window from this instance's lease on the key,
// booking one when the key is hot enough, and passes every other call,
// and every decision it does not lease, to the inner store.
//
// A local admission's Result is what the store would have answered a
// direct decision of that unit at now on the state the lease's booking
// left (its Remaining counts what this instance can still get, not what
// the fleet can); a local denial comes while the lease's next unit's turn
// has not come, with RetryAfter the wait until it. A request whose now is
// behind the latest this instance decided the key at is decided at that
// latest time, as the store decides one behind the key's latest.
func (s *Store) Decide(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	if cost != 1 || s.closed.Load() {
		return s.inner.Decide(ctx, key, alg, now, cost)
	}
	if _, ok := requestid.From(ctx); ok {
		return s.inner.Decide(ctx, key, alg, now, cost)
	}
	k, ok := keyOf(key, alg)
	if !ok {
		return s.inner.Decide(ctx, key, alg, now, cost)
	}
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	now = storecheck.Now(now)
	if algo.CheckDecision(alg, now, 1) != nil {
		return s.inner.Decide(ctx, key, alg, now, cost) // its error, as on every store
	}
	s.sweepIfDue(ctx, now)
	return s.decideLeased(ctx, k, key, alg, now)
}

// keyOf returns the entry key of a leasable algorithm's state, and false
// for an algorithm that cannot lease.
func keyOf(key store.Key, alg algorithms.Algorithm) (entryKey, bool) {
	if algo.CheckKind(alg) != nil {
		return entryKey{}, false
	}
	switch algo.FamilyOf(alg.Kind()) {
	case algo.FamilyBucket, algo.FamilyFixedWindow:
		return entryKey{key: key, kind: alg.Kind(), scope: algo.ScopeOf(alg)}, true
	}
	return entryKey{}, false
}

// decideLeased decides one leasable request at now.
func (s *Store) decideLeased(
	ctx context.Context,
	k entryKey,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
) (algorithms.Result, error) {
	observed := false
	for {
		e := s.entryFor(k)
		e.mu.Lock()
		if e.dead {
			e.mu.Unlock()
			continue
		}
		if !observed {
			e.sizer.Observe(now, 1)
			observed = true
		}
		e.used = max(e.used, now.UnixMicro())
		eff := now // the time a local spend is made at, never before the entry's latest
		if e.latest.After(now) {
			eff = e.latest
		} else {
			e.latest = now
		}
		var back giveBack
		if e.lease != nil && (e.alg != alg || e.returnDue(eff, s.p.RoundTrip)) {
			back = e.end(eff)
		}
		if e.lease != nil {
			if res, ok := e.lease.Spend(eff); ok {
				e.mu.Unlock()
				return res, nil
			}
			back = e.end(eff)
		}
		if ch := e.booking; ch != nil {
			// Another caller is booking: its lease is what this one
			// spends from.
			e.mu.Unlock()
			_ = s.giveBack(ctx, []giveBack{back})
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return algorithms.Result{}, ctx.Err()
			}
		}
		var n int64
		var maxWait time.Duration
		shift := e.shiftFor(alg, s.p)
		if now.UnixMicro() >= e.noBookUntil {
			ahead := max(e.ahead-now.Sub(e.aheadAt), 0)
			n, maxWait = e.sizer.Size(alg, now, ahead, shift)
		}
		if n < 1 {
			e.mu.Unlock()
			_ = s.giveBack(ctx, []giveBack{back})
			return s.direct(ctx, e, key, alg, now)
		}
		ch := make(chan struct{})
		e.booking = ch
		e.mu.Unlock()
		_ = s.giveBack(ctx, []giveBack{back})

		id := s.idPrefix + strconv.FormatUint(s.seq.Add(1), 36)
		res, err := s.book(requestid.With(ctx, id), key, alg, now, n, maxWait)

		e.mu.Lock()
		e.booking = nil
		close(ch)
		if err != nil {
			e.noBookUntil = now.Add(s.p.RoundTrip).UnixMicro()
			e.mu.Unlock()
			return s.direct(ctx, e, key, alg, now)
		}
		e.ahead, e.aheadAt = res.ResetAfter, now
		if !res.Allowed {
			// The normal path decides the request; no booking until the
			// store could admit one.
			e.noBookUntil = now.Add(max(res.RetryAfter, s.p.RoundTrip)).UnixMicro()
			e.mu.Unlock()
			return s.direct(ctx, e, key, alg, now)
		}
		l, err := core.New(alg, now, n, res, core.Config{Shift: shift})
		if err != nil || e.dead {
			// A reply the core refuses, or a Store closed meanwhile: give
			// the whole booking back.
			e.mu.Unlock()
			_ = s.giveBack(ctx, []giveBack{{key: key, alg: alg, id: id, now: now, at: res.At, n: n}})
			return s.direct(ctx, e, key, alg, now)
		}
		e.lease, e.alg, e.id, e.key = l, alg, id, key
		res, ok := l.Spend(eff)
		e.mu.Unlock()
		if ok {
			return res, nil
		}
		return s.direct(ctx, e, key, alg, now)
	}
}

// book books n units for key under alg at now in one round trip, with the
// request ID ctx carries (requestid.With): the inner store's Lease (store.Store.Lease), which books as
// Reserve does for the buckets and decides a cost of n for the fixed
// window. A booking whose outcome is unknown (store.ErrMaybeDecided) is
// sent once more with the same ID when the inner store applies IDs, and
// returns the first outcome.
func (s *Store) book(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	n int64,
	maxWait time.Duration,
) (algorithms.Result, error) {
	res, err := s.bookOnce(ctx, key, alg, now, n, maxWait)
	if err != nil && s.idem && errors.Is(err, store.ErrMaybeDecided) && ctx.Err() == nil {
		res, err = s.bookOnce(ctx, key, alg, now, n, maxWait)
	}
	return res, err
}

func (s *Store) bookOnce(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	n int64,
	maxWait time.Duration,
) (algorithms.Result, error) {
	res, _, err := s.inner.Lease(ctx, key, alg, now, n, maxWait)
	return res, err
}

// direct decides the request in the inner store, and keeps how far ahead
// its reply says the key's state is, for sizing the next lease.
func (s *Store) direct(
	ctx context.Context,
	e *entry,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
) (algorithms.Result, error) {
	res, err := s.inner.Decide(ctx, key, alg, now, 1)
	if err == nil {
		e.mu.Lock()
		if !now.Before(e.aheadAt) {
			e.ahead, e.aheadAt = res.ResetAfter, now
		}
		e.mu.Unlock()
	}
	return res, err
}

// giveBack is what an ended lease gives back through the inner store's
// Refund: n units of the booking with request ID id made at at.
type giveBack struct {
	key store.Key
	alg algorithms.Algorithm
	id  string
	now time.Time
	at  time.Time
	n   int64
}

// giveBackTimeout bounds a give-back, which runs on a context of its own
// (the caller's values, not its deadline): the units are the fleet's.
const giveBackTimeout = time.Second

// giveBack gives back each of backs that holds units, and returns the
// first error. A give-back whose outcome is unknown is sent once more with
// the same ID when the inner store applies IDs; one that fails is lost, as
// units the key admits fewer of, never more.
func (s *Store) giveBack(ctx context.Context, backs []giveBack) error {
	var first error
	for _, b := range backs {
		if b.n < 1 {
			continue
		}
		rctx, cancel := context.WithTimeout(requestid.With(context.WithoutCancel(ctx), b.id), giveBackTimeout)
		_, err := s.inner.Refund(rctx, b.key, b.alg, b.now, b.at, b.n)
		if err != nil && s.idem && errors.Is(err, store.ErrMaybeDecided) {
			_, err = s.inner.Refund(rctx, b.key, b.alg, b.now, b.at, b.n)
		}
		cancel()
		if first == nil {
			first = err
		}
	}
	return first
}
