package storepostgres

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// Refund gives back n units that a request admitted at time at was
// charged, with one function call in one round trip (see store.Store.Refund).
func (s *Store) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	now = s.orNow(now)
	if err := checkKind(alg); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckRefund(alg, s.checkTime(now), at, n); err != nil {
		return algorithms.Result{}, err
	}
	return retrySkew(ctx, s, now, func(now time.Time) (algorithms.Result, error) {
		return s.refund(ctx, k, alg, now, at, n)
	})
}

// refund is Refund once its input is checked.
func (s *Store) refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	id, given, err := s.begin(ctx)
	if err != nil {
		return algorithms.Result{}, err
	}
	nowArg, notBefore := s.clock(now)
	p1, p2, p3 := pgsql.Params(alg, now)
	rkey := key(k, alg)
	var once []byte
	var admitted [][]byte
	if given {
		once = onceKey(rkey, onceRefund, id)
		admitted = [][]byte{onceKey(rkey, onceDecide, id), onceKey(rkey, onceSet, id)}
	}
	var reply []int64
	err = s.queryRow(
		ctx,
		"SELECT ratewise."+alg.Kind().String()+"_give($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
		[]any{rkey, nowArg, at.UnixMicro(), n, p1, p2, p3, s.grace, once, admitted, algo.MaxCost(alg),
			algo.QuotaOf(alg).Window.Microseconds()},
		&reply,
	)
	if err != nil {
		return algorithms.Result{}, s.failure(ctx, err, true)
	}
	want, limit := 5, algo.MaxCost(alg)
	if given {
		want = 6
	}
	if len(reply) != want {
		return algorithms.Result{}, malformed(reply, "want %d integers", want)
	}
	if given {
		limit, notBefore = reply[5], 0 // the first outcome, decided earlier
	}
	return fields(reply, limit, notBefore)
}
