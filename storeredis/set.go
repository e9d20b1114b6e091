package storeredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, with one script in one round trip (see store.SetDecider). The
// algorithms' keys share key's hash tag, so on Redis Cluster they live in
// one slot and one script can reach them all.
func (s *Store) DecideSet(ctx context.Context, k store.Key, algs []algorithms.Algorithm, now time.Time, cost int64) ([]algorithms.Result, error) {
	for _, alg := range algs {
		if _, err := scriptFor(alg); err != nil {
			return nil, err
		}
	}
	if err := storecheck.Set(algs, s.checkTime(now), cost); err != nil {
		return nil, err
	}
	d := &setDecision{algs: algs, cost: cost, index: map[*algorithms.Kind]int{}}
	d.effect, d.now, d.charges = changes, now, cost > 0
	key := k.String()
	d.rkeys = make([]string, len(algs))
	for i, alg := range algs {
		d.rkeys[i] = s.Key(key, alg)
		if _, ok := d.index[alg.Kind()]; !ok {
			d.kinds = append(d.kinds, alg.Kind())
			d.index[alg.Kind()] = len(d.kinds)
		}
	}
	if err := s.do(ctx, d); err != nil {
		return nil, err
	}
	return d.results, nil
}

// setDecision is the op of a decision over a set of limits on one key
// (decide_set.lua).
type setDecision struct {
	request
	algs    []algorithms.Algorithm
	cost    int64
	kinds   []*algorithms.Kind       // the set's kinds, each once, in order of first use
	index   map[*algorithms.Kind]int // a kind's index in kinds, from 1
	results []algorithms.Result
}

func (d *setDecision) script() (*redis.Script, error) { return scripts.Set(d.kinds) }

// keys are every limit's state, then with a request ID the set's once key,
// on the first state; with the caller's ID, each other limit's state knows
// the admission too, so that a refund of it with that ID forgets it (see
// internal/scripts/refund.lua); a store-made ID names no refund.
func (d *setDecision) keys() []string {
	once := d.rid.key(d.rkeys[0], onceSet)
	if once == "" {
		return d.rkeys
	}
	keys := append(make([]string, 0, 2*len(d.rkeys)), d.rkeys...)
	keys = append(keys, once)
	if d.rid.caller {
		for _, k := range d.rkeys[1:] {
			keys = append(keys, d.rid.key(k, onceSet))
		}
	}
	return keys
}

// args are ARGV: now, the cost and the once keys' least lifetime, then for
// each limit its kind's index in the script, how many values follow, and
// those: its parameters, or with a once key four and its limit.
func (d *setDecision) args() []any {
	args := make([]any, 0, 3+7*len(d.algs))
	args = append(args, d.at, d.cost, d.horizon)
	for _, alg := range d.algs {
		n := len(args)
		if d.rid.id == "" {
			args = appendParams(append(args, d.index[alg.Kind()], 0), alg)
		} else {
			args = append(appendOnceParams(append(args, d.index[alg.Kind()], 0), alg), algo.MaxCost(alg))
		}
		args[n+1] = len(args) - n - 2
	}
	return args
}

// parse reads decide_set.lua's reply: each limit's five fields, then with a
// once key each limit's limit and parameters, then the cost. A set that
// charged nothing keeps its Results uncharged.
func (d *setDecision) parse(reply any) error {
	n, once := len(d.algs), d.rid.id != ""
	want := 5 * n
	if once {
		want += 3*n + 1 // each limit's limit and parameters, then the cost
	}
	fields, err := fieldsOf(reply, want)
	if err != nil {
		return err
	}
	results := make([]algorithms.Result, n)
	all := true
	for i, alg := range d.algs {
		limit := algo.MaxCost(alg)
		if once {
			if limit, err = limitOf(fields[5*n+3*i], reply); err != nil {
				return err
			}
		}
		if results[i], err = parseFields(fields[5*i:5*i+5], limit, d.notBefore); err != nil {
			return err
		}
		all = all && results[i].Allowed
	}
	if all {
		for i, alg := range d.algs {
			if !once {
				results[i] = algo.Charge(results[i], alg, d.cost)
			} else if results[i], err = chargeOf(results[i], alg, []any{fields[5*n+3*i+1], fields[5*n+3*i+2], fields[want-1]}); err != nil {
				return err
			}
		}
	}
	d.results = results
	return nil
}
