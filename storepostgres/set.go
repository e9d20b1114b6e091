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

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, with one function call in one round trip (see
// store.Store.DecideSet).
func (s *Store) DecideSet(
	ctx context.Context,
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	now = s.orNow(now)
	for _, alg := range algs {
		if err := checkKind(alg); err != nil {
			return nil, err
		}
	}
	if err := storecheck.Set(algs, s.checkTime(now), cost); err != nil {
		return nil, err
	}
	return retrySkew(ctx, s, now, func(now time.Time) ([]algorithms.Result, error) {
		return s.decideSet(ctx, k, algs, now, cost)
	})
}

// decideSet is DecideSet once its input is checked.
func (s *Store) decideSet(
	ctx context.Context,
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	id, given, err := s.begin(ctx)
	if err != nil {
		return nil, err
	}
	nowArg, notBefore := s.clock(now)
	n := len(algs)
	keys := make([][]byte, n)
	kinds := make([]string, n)
	params := make([]*int64, 0, 3*n)
	lims := make([]int64, n)
	for i, alg := range algs {
		keys[i], kinds[i], lims[i] = key(k, alg), alg.Kind().String(), algo.MaxCost(alg)
		p1, p2, p3 := pgsql.Params(alg, now)
		params = append(params, &p1, &p2, p3)
	}
	once := given && cost > 0
	var onceArg []byte
	var marks [][]byte
	if once {
		onceArg = onceKey(keys[0], onceSet, id)
		for _, rk := range keys[1:] {
			marks = append(marks, onceKey(rk, onceSet, id))
		}
	}
	var reply []int64
	err = s.queryRow(ctx, "SELECT ratewise.decide_set($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)",
		[]any{keys, kinds, params, nowArg, cost, s.grace, onceArg, marks, lims}, &reply)
	if err != nil {
		return nil, s.failure(ctx, err, cost > 0)
	}
	s.sweep.tick(s, 1)
	want := 5 * n
	if once {
		want += 3*n + 1
		notBefore = 0 // the first outcome, which a retry returns, was decided earlier
	}
	if len(reply) != want {
		return nil, malformed(reply, "want %d integers", want)
	}
	results := make([]algorithms.Result, n)
	all := true
	for i, alg := range algs {
		limit := algo.MaxCost(alg)
		if once {
			limit = reply[5*n+3*i]
		}
		if results[i], err = fields(reply[5*i:5*i+5], limit, notBefore); err != nil {
			return nil, err
		}
		all = all && results[i].Allowed
	}
	if !all {
		return results, nil
	}
	for i, alg := range algs {
		if !once {
			results[i].SetCharged(alg, cost)
		} else if results[i], err = storecheck.Charged(
			results[i], alg, reply[5*n+3*i+1], reply[5*n+3*i+2], reply[want-1],
		); err != nil {
			return nil, malformed(reply, "%v", err)
		}
	}
	return results, nil
}
