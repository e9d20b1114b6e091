package storeredis

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/coalesce"
	"github.com/ratewise/ratewise/internal/hashslot"
	"github.com/ratewise/ratewise/store"
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
// request ID (ratewise.WithRequestID), whose reply carries its limit; Reserve,
// Refund, DecideSet, Reset and TTL always take their own round trip.
// Clients other than *redis.Client and *redis.ClusterClient, such as
// *redis.Ring, are never coalesced, and neither is a store with
// WithReplicas, whose every script is followed by its own WAIT on its
// connection.
func WithCoalescing(n int) Option {
	return optionFunc(func(s *Store) { s.coalesce = max(n, 0) })
}

// maxBatch is the most decisions one script call makes: a batch blocks
// Redis while it runs, like any script, so a long queue is split into
// several calls, still sent in one round trip.
const maxBatch = 128

// newCoalescer returns the store's coalescer on client, or nil for a
// client other than a *redis.Client or a *redis.ClusterClient: on a
// cluster, decisions queue by the master that serves their key (see
// master).
func (s *Store) newCoalescer(client Client) *coalesce.Coalescer[*decision] {
	switch c := client.(type) {
	case *redis.Client:
		return coalesce.New(s.coalesce, s.sendBatch, nil)
	case *redis.ClusterClient:
		return coalesce.New(s.coalesce, s.sendBatch, func(d *decision) string { return master(c, d.rkeys[0]) })
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

// sendBatch decides every decision of ds in one round trip and sets its
// res or err: the coalescer's send. The batch's decisions are grouped by
// kind, and on a cluster by hash slot, at most maxBatch to a group, and
// each group is one script call.
func (s *Store) sendBatch(ctx context.Context, ds []*decision) {
	type groupID struct {
		kind *algorithms.Kind
		slot int
	}
	_, cluster := s.client.(*redis.ClusterClient)
	var groups []*group
	index := map[groupID]*group{}
	for _, d := range ds {
		slot := 0
		if cluster {
			slot = hashslot.Of(d.rkeys[0])
		}
		id := groupID{d.alg.Kind(), slot}
		g := index[id]
		if g == nil || len(g.ds) == maxBatch {
			g = &group{kind: d.alg.Kind(), clientTime: s.clientTime, horizon: s.horizon}
			index[id] = g
			groups = append(groups, g)
		}
		g.ds = append(g.ds, d)
	}
	err := s.runBatch(ctx, groups)
	for _, g := range groups {
		g.settle(err)
	}
}

// runBatch is the run step of a batch: one script call per group,
// pipelined when there are several, and sent again with EVAL, once, for
// the groups whose script Redis did not have cached. Each group's reply or
// error is then in its cmd; an error is returned only when a script could
// not be assembled.
func (s *Store) runBatch(ctx context.Context, groups []*group) error {
	run := make([]*redis.Script, len(groups))
	for i, g := range groups {
		var err error
		if run[i], err = g.script(); err != nil {
			return err
		}
		g.keys, g.args = g.keysAndArgs()
	}
	exec := func(eval bool, only []int) {
		send := func(c redis.Scripter, i int) {
			g := groups[i]
			if eval {
				g.cmd = run[i].Eval(ctx, c, g.keys, g.args...)
			} else {
				g.cmd = run[i].EvalSha(ctx, c, g.keys, g.args...)
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

// group is the op of the decisions of a batch that one script call
// decides (decide_batch.lua): one algorithm kind, and on a cluster one
// hash slot. Its decisions have been through do's steps up to the run.
type group struct {
	kind       *algorithms.Kind
	ds         []*decision
	clientTime bool  // each decision sends its own now
	horizon    int64 // µs a once key lives at least (Store.horizon)
	keys       []string
	args       []any
	cmd        *redis.Cmd
}

func (g *group) script() (*redis.Script, error) { return scripts.Batch(g.kind) }

// keysAndArgs returns the group's KEYS, each decision's state and then the
// once keys of those that have one, and its ARGV: each distinct parameter
// set once, then for each decision the index of its set, its cost, the
// index of its once key in KEYS (0 for none) and in client-time mode its
// now.
func (g *group) keysAndArgs() ([]string, []any) {
	first := g.ds[0]
	width := paramCount(first.alg)
	var sets []algorithms.Params
	var algs []algorithms.Algorithm // one of each set
	index := make([]int, len(g.ds))
	for i, d := range g.ds {
		j := slices.Index(sets, algo.ParamsOf(d.alg))
		if j < 0 {
			j = len(sets)
			sets, algs = append(sets, algo.ParamsOf(d.alg)), append(algs, d.alg)
		}
		index[i] = j + 1
	}
	keys := make([]string, len(g.ds), 2*len(g.ds))
	args := make([]any, 0, 4+width*len(sets)+4*len(g.ds))
	args = append(args, first.at, g.horizon, len(sets), width)
	for _, alg := range algs {
		args = appendParams(args, alg)
	}
	for i, d := range g.ds {
		keys[i] = d.rkeys[0]
		onceIndex := 0
		if once := d.once(); once != "" {
			keys = append(keys, once)
			onceIndex = len(keys)
		}
		args = append(args, index[i], d.cost, onceIndex)
		if g.clientTime {
			args = append(args, d.at)
		}
	}
	return keys, args
}

// parse reads decide_batch.lua's reply: five fields for each decision, in
// order, read by the decision itself (inBatch); a decision whose script
// raised an error replies -1 and the message, and fails alone.
func (g *group) parse(reply any) error {
	fields, ok := reply.([]any)
	if !ok || len(fields) != 5*len(g.ds) {
		return fmt.Errorf("want %d values (reply %v)", 5*len(g.ds), reply)
	}
	for i, d := range g.ds {
		f := fields[5*i : 5*i+5]
		if f[0] == int64(-1) {
			d.err = fmt.Errorf("%w: %v", store.ErrUnavailable, f[1])
			continue
		}
		d.err = parse(inBatch{d}, f)
	}
	return nil
}

// settle sets the outcome of each decision of g from its reply, or to err
// when its script could not be assembled or its round trip failed.
func (g *group) settle(err error) {
	if err == nil {
		if err = g.cmd.Err(); err == nil {
			err = parse(g, g.cmd.Val())
		}
	}
	if err != nil {
		for _, d := range g.ds {
			d.err = err
		}
	}
}
