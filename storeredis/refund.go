package storeredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Refund gives back n units that a request admitted at time at was
// charged, in one round trip (see store.Store.Refund).
func (s *Store) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	now = s.orNow(now)
	if _, err := scriptFor(alg); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckRefund(alg, s.checkTime(now), at, n); err != nil {
		return algorithms.Result{}, err
	}
	r := &refund{alg: alg, admitted: at, n: n}
	r.effect, r.now, r.charges = changes, now, true
	r.own[0] = s.Key(k.String(), alg)
	r.rkeys = r.own[:]
	if err := s.do(ctx, r); err != nil {
		return algorithms.Result{}, err
	}
	return r.res, nil
}

// refund is the op of a refund (refund.lua).
type refund struct {
	request
	own      [1]string // rkeys' array
	alg      algorithms.Algorithm
	admitted time.Time // when the request given back was admitted
	n        int64
	res      algorithms.Result
}

func (r *refund) script() (*redis.Script, error) { return scripts.Refund(r.alg.Kind()) }

// keys are the state, then with a request ID the refund's once key, and
// with the caller's ID the once keys of the admission it gives back, if
// made with the same ID: a decision's or booking's, and a set's.
func (r *refund) keys() []string {
	rkey := r.rkeys[0]
	if r.rid.id == "" {
		return r.rkeys
	}
	keys := []string{rkey, r.rid.key(rkey, onceRefund)}
	if r.rid.caller {
		keys = append(keys, r.rid.key(rkey, onceDecide), r.rid.key(rkey, onceSet))
	}
	return keys
}

// args are ARGV: now, n, the admission's time in µs and the parameters,
// and with a once key four parameters, the limit, the once key's least
// lifetime and how long a charge counts at most in µs.
func (r *refund) args() []any {
	if r.rid.id == "" {
		return appendParams(append(make([]any, 0, 7), r.at, r.n, r.admitted.UnixMicro()), r.alg, r.now)
	}
	return append(appendOnceParams(append(make([]any, 0, 10), r.at, r.n, r.admitted.UnixMicro()), r.alg, r.now),
		algo.MaxCost(r.alg), r.horizon, int64(algo.QuotaOf(r.alg).Window/time.Microsecond))
}

// parse reads refund.lua's reply: an inspection's five fields, then with a
// once key the limit.
func (r *refund) parse(reply any) error {
	if r.rid.id == "" {
		res, err := parseReply(reply, algo.MaxCost(r.alg), r.notBefore)
		r.res = res
		return err
	}
	fields, err := fieldsOf(reply, 6)
	if err != nil {
		return err
	}
	limit, err := limitOf(fields[5], reply)
	if err != nil {
		return err
	}
	r.res, err = parseFields(fields[:5], limit, r.notBefore)
	return err
}
