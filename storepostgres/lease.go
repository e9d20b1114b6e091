package storepostgres

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// markKey is the key of the mark of the state at rkey: the row the latest
// lease on it left, copied (store.Store.Lease). No state's key starts with '!'
// (a kind's name comes first), so no mark is a state.
func markKey(rkey []byte) []byte {
	return append(append(make([]byte, 0, len(rkey)+6), "!mark:"...), rkey...)
}

// Lease books cost units of a lease for key under alg (see store.Store.Lease),
// in one statement: as Reserve books for the token bucket and GCRA, and as
// Decide decides for the fixed window, and on admission copies the key's
// row to its mark, which Reset puts back.
func (s *Store) Lease(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = s.orNow(now)
	if err := checkKind(alg); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Lease(alg, s.checkTime(now), cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	id, given, err := s.begin(ctx)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	at, notBefore := s.clock(now)
	p1, p2, p3 := pgsql.Params(alg, now)
	rkey := key(k, alg)
	var once []byte // NULL without a request ID
	if given {
		once = onceKey(rkey, onceDecide, id)
		notBefore = 0 // the first outcome, which a retry returns, was decided earlier
	}
	var slack int64
	if algo.Reserves(alg) {
		slack = maxWait.Microseconds()
	}
	var reply []int64
	err = s.queryRow(ctx, "SELECT ratewise."+alg.Kind().String()+"_lease($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0)",
		[]any{rkey, markKey(rkey), once, at, cost, slack, p1, p2, p3, s.grace, algo.MaxCost(alg)}, &reply)
	if err != nil {
		return algorithms.Result{}, 0, s.failure(ctx, err, true)
	}
	s.sweep.tick(s, 1)
	return decisionResult(reply, alg, cost, given, notBefore)
}
