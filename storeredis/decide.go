package storeredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Decide runs alg's script for key in one round trip, which it may share
// with concurrent decisions (see WithCoalescing), or denies at once a
// request that a recent denial still covers (see WithDenyCache).
func (s *Store) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	now = s.orNow(now)
	if _, err := scriptFor(alg); err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckDecision(alg, s.checkTime(now), cost); err != nil {
		return algorithms.Result{}, err
	}
	var buf [keyBuf]byte
	rkey := s.appendKey(buf[:0], k.String(), alg)
	if s.deny == nil || cost <= 0 {
		return s.send(ctx, string(rkey), alg, now, cost)
	}
	// A request with the caller's ID may be a retry of an admission, which
	// it must get back: a cached denial does not answer it. What it does
	// to the key (a denial of a cost above 1 moves its latest time, an
	// admission charges it) still changes what the cache may answer.
	if _, given := requestid.From(ctx); given {
		t, key := s.denyClock(now), string(rkey)
		gen := s.deny.Generation(key)
		res, err := s.send(ctx, key, alg, now, cost)
		if err == nil {
			s.deny.Remember(key, alg, res, cost, t, gen)
		}
		return res, err
	}
	return s.decideCached(ctx, rkey, alg, now, cost)
}

// send runs a decision on the state at rkey.
func (s *Store) send(
	ctx context.Context,
	rkey string,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	d := newDecision(rkey, alg, now, cost)
	if err := s.do(ctx, d); err != nil {
		return algorithms.Result{}, err
	}
	return d.res, nil
}

// decision is the op of one decision (decide.lua), alone or, if it shares
// its round trip, in a batch (decide_batch.lua, see sendBatch).
type decision struct {
	request
	own  [1]string // rkeys' array
	alg  algorithms.Algorithm
	cost int64
	res  algorithms.Result
}

func newDecision(rkey string, alg algorithms.Algorithm, now time.Time, cost int64) *decision {
	d := &decision{alg: alg, cost: cost}
	d.effect, d.now, d.charges = decides, now, cost > 0
	d.own[0] = rkey
	d.rkeys = d.own[:]
	return d
}

func (d *decision) script() (*redis.Script, error) { return scripts.Decision(d.alg.Kind()) }

// once is the decision's once key, or "" without a request ID.
func (d *decision) once() string { return d.rid.key(d.rkeys[0], onceDecide) }

func (d *decision) keys() []string {
	if once := d.once(); once != "" {
		return []string{d.rkeys[0], once}
	}
	return d.rkeys
}

// args are ARGV: now and the cost, the parameters, and with a once key
// four parameters, the limit and the once key's least lifetime.
func (d *decision) args() []any {
	if d.rid.id == "" {
		return appendParams(append(make([]any, 0, 6), d.at, d.cost), d.alg, d.now)
	}
	return append(appendOnceParams(append(make([]any, 0, 8), d.at, d.cost), d.alg, d.now), algo.MaxCost(d.alg), d.horizon)
}

// parse reads decide.lua's reply: five fields, then with a once key the
// limit and what the admission charged (see chargeOf).
func (d *decision) parse(reply any) error {
	if d.rid.id == "" {
		res, err := parseReply(reply, algo.MaxCost(d.alg), d.notBefore)
		res.SetCharged(d.alg, d.cost)
		d.res = res
		return err
	}
	fields, err := fieldsOf(reply, 9)
	if err != nil {
		return err
	}
	limit, err := limitOf(fields[5], reply)
	if err != nil {
		return err
	}
	res, err := parseFields(fields[:5], limit, d.notBefore)
	if err != nil {
		return err
	}
	d.res, err = chargeOf(res, d.alg, fields[6:9])
	return err
}

// inBatch is a decision read from its share of a batch's reply: its five
// fields alone. A batch carries only the store's own IDs, resent as they
// were: what an admission charged is the decision's.
type inBatch struct{ *decision }

func (d inBatch) parse(reply any) error {
	res, err := parseReply(reply, algo.MaxCost(d.alg), d.notBefore)
	res.SetCharged(d.alg, d.cost)
	d.res = res
	return err
}
