package storeredis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/hashslot"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/coalesce"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// DefaultCoalescing is how many decisions a store sends alone at once
// before later ones queue to share round trips (see WithCoalescing).
const DefaultCoalescing = 2

// WithCoalescing sets how many decisions the store sends alone at once
// before later ones queue to share round trips; n = 0 turns coalescing off.
//
// While nothing is queued and fewer than n decisions are in flight alone, a
// decision is sent on its own, at once, exactly as without coalescing, so a
// caller alone waits for nothing. Otherwise it queues, and at most two
// goroutines send the queue, everything queued in each round trip: on
// standalone Redis (or Sentinel) one script call per algorithm decides the
// whole batch, reading TIME once. On Redis Cluster each master has a queue
// of its own, with its own two goroutines, and its batch is one script call
// per hash slot, pipelined: a master that is down or stalled delays and
// fails only the decisions on its own keys. Each decision is as atomic as
// alone: the script decides the batch's decisions one after another, each
// seeing the state the previous left. A round trip that fails reports the
// error to each decision in it; an error on one key (a foreign value, say)
// fails only that decision. A caller whose ctx ends while it waits returns
// at once with ctx's error; its decision may still be made.
//
// Only Decide coalesces, and not a charging Decide that carries the caller's
// request ID (store.WithRequestID), whose reply carries its limit; Reserve,
// Refund, DecideSet, Reset and TTL always take their own round trip. Clients other than *redis.Client and
// *redis.ClusterClient, such as *redis.Ring, are never coalesced, and
// neither is a store with WithReplicas, whose every script is followed by
// its own WAIT on its connection.
func WithCoalescing(n int) Option {
	return optionFunc(func(s *Store) { s.coalesce = max(n, 0) })
}

// maxBatch is the most decisions one script call makes: a batch blocks
// Redis while it runs, like any script, so a long queue is split into
// several calls, still sent in one round trip.
const maxBatch = 128

// call is a decision queued to share a round trip (see WithCoalescing):
// what its share of a batch's script needs, and its outcome.
type call struct {
	key       string // the Redis key
	once      string // its once key, or ""
	alg       algorithms.Algorithm
	at        any // ARGV's now: serverTime, or µs in client-time mode
	notBefore int64
	cost      int64
	res       algorithms.Result
	err       error
}

// newCoalescer returns the store's coalescer on client, or nil for a
// client other than a *redis.Client or a *redis.ClusterClient: on a
// cluster, decisions queue by the master that serves their key (see
// master).
func (s *Store) newCoalescer(client Client) *coalesce.Coalescer[call] {
	switch c := client.(type) {
	case *redis.Client:
		return coalesce.New(s.coalesce, s.sendBatch, nil)
	case *redis.ClusterClient:
		return coalesce.New(s.coalesce, s.sendBatch, func(d call) string { return master(c, d.key) })
	}
	return nil
}

// master is the address of the cluster node serving key, as the client's
// view of the slots has it, or "" if the client cannot tell. A batch is
// then one node's round trip, and a queue's goroutines wait only for their
// node, so a node that fails or stalls (go-redis retries a dead node's
// share of a pipeline before the pipeline returns) holds up neither the
// decisions of other nodes that would have shared its batch nor the
// goroutines that send theirs. A key whose slot moved after it joined is
// still decided in its batch: the pipeline routes each script call by its
// slot.
func master(c *redis.ClusterClient, key string) string {
	node, err := c.MasterForKey(context.Background(), key)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}

// group is the calls of a batch that one script call decides: one
// algorithm kind, and on a cluster one hash slot.
type group struct {
	kind  *algorithms.Kind
	slot  int
	calls []int // indexes into the batch
	cmd   *redis.Cmd
}

// sendBatch decides every call of calls in one round trip and sets its res
// or err: the coalescer's send.
func (s *Store) sendBatch(ctx context.Context, calls []call) {
	type groupID struct {
		kind *algorithms.Kind
		slot int
	}
	_, cluster := s.client.(*redis.ClusterClient)
	var groups []*group
	index := map[groupID]*group{}
	for i := range calls {
		c := &calls[i]
		slot := 0
		if cluster {
			slot = hashslot.Of(c.key)
		}
		id := groupID{c.alg.Kind(), slot}
		g := index[id]
		if g == nil || len(g.calls) == maxBatch {
			g = &group{kind: c.alg.Kind(), slot: slot}
			index[id] = g
			groups = append(groups, g)
		}
		g.calls = append(g.calls, i)
	}
	err := s.runBatch(ctx, calls, groups)
	for _, g := range groups {
		settle(calls, g, err)
	}
}

// run sends one script call per group, pipelined when there are several,
// and sends again with EVAL, once, the calls whose script Redis did not
// have cached. Each group's reply or error is then in its cmd; an error is
// returned only when a script could not be assembled.
func (s *Store) runBatch(ctx context.Context, calls []call, groups []*group) error {
	run := make([]*redis.Script, len(groups))
	args := make([][]any, len(groups))
	keys := make([][]string, len(groups))
	for i, g := range groups {
		var err error
		if run[i], err = scripts.Batch(g.kind); err != nil {
			return err
		}
		keys[i], args[i] = batchArgs(calls, g, s.clientTime, s.horizon)
	}
	exec := func(eval bool, only []int) {
		send := func(c redis.Scripter, i int) {
			if eval {
				groups[i].cmd = run[i].Eval(ctx, c, keys[i], args[i]...)
			} else {
				groups[i].cmd = run[i].EvalSha(ctx, c, keys[i], args[i]...)
			}
		}
		if len(only) == 1 {
			send(s.client, only[0])
			return
		}
		pipe := s.client.(interface{ Pipeline() redis.Pipeliner }).Pipeline()
		for _, i := range only {
			send(pipe, i)
		}
		pipe.Exec(ctx) // each cmd holds its own error, a failed round trip's included
	}
	all := make([]int, len(groups))
	for i := range all {
		all[i] = i
	}
	exec(false, all)
	var missing []int
	for i, g := range groups {
		if redis.HasErrorPrefix(g.cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		exec(true, missing)
	}
	return nil
}

// batchArgs returns a group's KEYS and ARGV for decide_batch.lua: each
// distinct parameter set once, then for each decision the index of its
// set, its cost, the index of its once key in KEYS (0 for none) and in
// client-time mode its now.
func batchArgs(calls []call, g *group, clientTime bool, horizon int64) ([]string, []any) {
	first := &calls[g.calls[0]]
	width := paramCount(first.alg)
	var sets []algorithms.Params
	var algs []algorithms.Algorithm // one of each set
	index := make([]int, len(g.calls))
	for i, ci := range g.calls {
		alg := calls[ci].alg
		j := slices.Index(sets, algo.ParamsOf(alg))
		if j < 0 {
			j = len(sets)
			sets, algs = append(sets, algo.ParamsOf(alg)), append(algs, alg)
		}
		index[i] = j + 1
	}
	keys := make([]string, len(g.calls), 2*len(g.calls))
	args := make([]any, 0, 4+width*len(sets)+4*len(g.calls))
	args = append(args, first.at, horizon, len(sets), width)
	for _, alg := range algs {
		args = appendParams(args, alg)
	}
	for i, ci := range g.calls {
		c := &calls[ci]
		keys[i] = c.key
		onceIndex := 0
		if c.once != "" {
			keys = append(keys, c.once)
			onceIndex = len(keys)
		}
		args = append(args, index[i], c.cost, onceIndex)
		if clientTime {
			args = append(args, c.at)
		}
	}
	return keys, args
}

// paramCount is how many parameters appendParams appends for alg.
func paramCount(alg algorithms.Algorithm) int {
	n, k := 2, alg.Kind()
	if algo.TakesBurst(k) {
		n++
	}
	if algo.TakesSubWindows(k) {
		n++
	}
	return n
}

// settle sets the res or err of each call of g from its reply, or to err
// when the round trip failed.
func settle(calls []call, g *group, err error) {
	if err == nil {
		err = g.cmd.Err()
	}
	if err != nil {
		for _, ci := range g.calls {
			calls[ci].err = err
		}
		return
	}
	fields, ok := g.cmd.Val().([]any)
	if !ok || len(fields) != 5*len(g.calls) {
		err := fmt.Errorf("%w: %w: want %d values (reply %v)", store.ErrUnavailable, ErrMalformedReply, 5*len(g.calls), g.cmd.Val())
		for _, ci := range g.calls {
			calls[ci].err = err
		}
		return
	}
	for i, ci := range g.calls {
		c := &calls[ci]
		f := fields[5*i : 5*i+5]
		if f[0] == int64(-1) {
			c.err = fmt.Errorf("%w: %v", store.ErrUnavailable, f[1])
			continue
		}
		c.res, c.err = parseFields(f, algo.MaxCost(c.alg), c.notBefore)
		// A batch carries only the store's own IDs, resent as they were:
		// what an admission charged is the call's.
		c.res = algo.Charge(c.res, c.alg, c.cost)
	}
}

// outcome is a sent call's Result, or its error classified as Decide's
// are (see failure): a decision's own error already wraps
// store.ErrUnavailable, a round trip's is go-redis's.
func (s *Store) outcome(ctx context.Context, c *call) (algorithms.Result, error) {
	if c.err != nil && !errors.Is(c.err, store.ErrUnavailable) {
		return algorithms.Result{}, s.decisionFailure(ctx, c.err)
	}
	return c.res, c.err
}
