package storeredis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, with one script in one round trip (see store.Store.DecideSet), which
// it may share with concurrent decisions (see WithCoalescing). The
// algorithms' keys share key's hash tag, so on Redis Cluster they live in
// one slot and one script can reach them all.
func (s *Store) DecideSet(
	ctx context.Context,
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	now = s.orNow(now)
	d, err := s.newSetDecision(k, algs, now, cost)
	if err != nil {
		return nil, err
	}
	if err := s.do(ctx, d); err != nil {
		return nil, err
	}
	return d.results, nil
}

// newSetDecision returns the op of a set's decision, or what is wrong with
// its input.
func (s *Store) newSetDecision(
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) (*setDecision, error) {
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
			d.signature += "," + alg.Kind().String()
		}
	}
	return d, nil
}

// setDecision is the op of a decision over a set of limits on one key
// (decide_set.lua; in a batch, a share of a setCall).
type setDecision struct {
	request
	algs      []algorithms.Algorithm
	cost      int64
	kinds     []*algorithms.Kind       // the set's kinds, each once, in order of first use
	index     map[*algorithms.Kind]int // a kind's index in kinds, from 1
	signature string                   // the kinds' names, each after a ","
	results   []algorithms.Result
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
			args = appendParams(append(args, d.index[alg.Kind()], 0), alg, d.now)
		} else {
			args = append(appendOnceParams(append(args, d.index[alg.Kind()], 0), alg, d.now), algo.MaxCost(alg))
		}
		args[n+1] = len(args) - n - 2
	}
	return args
}

// parse reads decide_set.lua's reply: each limit's five fields, then with a
// once key each limit's limit and parameters, then the cost. A set that
// charged nothing keeps its Results uncharged.
func (d *setDecision) parse(reply any) error { return d.parseResults(reply, d.rid.id != "") }

// parseResults is parse for a reply that has the once key's fields or not.
func (d *setDecision) parseResults(reply any, once bool) error {
	n := len(d.algs)
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
				results[i].SetCharged(alg, d.cost)
			} else if results[i], err = chargeOf(
				results[i], alg, []any{fields[5*n+3*i+1], fields[5*n+3*i+2], fields[want-1]},
			); err != nil {
				return err
			}
		}
	}
	d.results = results
	return nil
}

// setInBatch is a set's decision read from its share of a batch's reply:
// each limit's five fields alone. A batch carries only the store's own
// IDs, resent as they were: what an admission charged is the set's.
type setInBatch struct{ *setDecision }

func (d setInBatch) parse(reply any) error { return d.parseResults(reply, false) }

// setCall is the script call of a batch's sets' decisions of one list of
// kinds (decide_set_batch.lua).
type setCall struct {
	batchOf[*setDecision]
	kinds []*algorithms.Kind
}

func (d *setDecision) family() string { return "set" + d.signature }

func (d *setDecision) newCall(clientTime bool, horizon int64) call {
	return &setCall{batchOf: batchOf[*setDecision]{clientTime: clientTime, horizon: horizon}, kinds: d.kinds}
}

func (c *setCall) script() (*redis.Script, error) { return scripts.SetBatch(c.kinds) }

// keysAndArgs returns the call's KEYS, each set's states in turn and then
// the once keys of those that have one, and its ARGV: each distinct set of
// limits once (its number of limits, then for each its kind's index, the
// number of its parameters and those), then for each decision the index of
// its set, its cost, the index of its once key in KEYS (0 for none) and in
// client-time mode its now. The kinds of every set of the call are
// c.kinds, in the same order, so a kind's index is the same in each.
func (c *setCall) keysAndArgs() ([]string, []any) {
	// A set is its limits, and the caller's now, which a calendar
	// window's parameters depend on (see stepParams).
	type limitSet struct {
		algs []algorithms.Algorithm
		now  time.Time
	}
	var sets []limitSet
	index := make([]int, len(c.ops))
	for i, d := range c.ops {
		j := slices.IndexFunc(sets, func(set limitSet) bool {
			return sameLimits(set.algs, d.algs) && sameParams(set.algs, set.now, d.now)
		})
		if j < 0 {
			j = len(sets)
			sets = append(sets, limitSet{algs: d.algs, now: d.now})
		}
		index[i] = j + 1
	}
	keys := make([]string, 0, c.n+len(c.ops))
	args := make([]any, 0, 3+len(sets)*(1+7*len(c.kinds))+4*len(c.ops))
	args = append(args, c.ops[0].at, c.horizon, len(sets))
	for _, set := range sets {
		args = append(args, len(set.algs))
		for _, alg := range set.algs {
			n := len(args)
			args = appendParams(append(args, c.ops[0].index[alg.Kind()], 0), alg, set.now)
			args[n+1] = len(args) - n - 2
		}
	}
	for _, d := range c.ops {
		keys = append(keys, d.rkeys...)
	}
	for i, d := range c.ops {
		onceIndex := 0
		if once := d.rid.key(d.rkeys[0], onceSet); once != "" {
			keys = append(keys, once)
			onceIndex = len(keys)
		}
		args = append(args, index[i], d.cost, onceIndex)
		if c.clientTime {
			args = append(args, d.at)
		}
	}
	return keys, args
}

// sameLimits reports whether a and b are the same limits in the same order.
func sameLimits(a, b []algorithms.Algorithm) bool {
	return slices.EqualFunc(a, b, func(x, y algorithms.Algorithm) bool {
		return x.Kind() == y.Kind() && algo.ParamsOf(x) == algo.ParamsOf(y)
	})
}

// parse reads decide_set_batch.lua's reply: five fields for each limit of
// each set, in order, read by the set's decision itself (setInBatch); a
// set whose script raised an error replies -1 and the message, and fails
// alone.
func (c *setCall) parse(reply any) error {
	fields, ok := reply.([]any)
	if !ok || len(fields) != 5*c.n {
		return fmt.Errorf("want %d values (reply %v)", 5*c.n, reply)
	}
	for _, d := range c.ops {
		f := fields[:5*len(d.algs)]
		fields = fields[len(f):]
		if f[0] == int64(-1) {
			d.err = fmt.Errorf("%w: %v", store.ErrUnavailable, f[1])
			continue
		}
		d.err = parse(setInBatch{d}, f)
	}
	return nil
}
