package storeredis

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/coalesce"
	"github.com/ratewise/ratewise/internal/hashslot"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// defaultCoalescing is how many decisions a store sends alone at once
// before later ones queue to share round trips (see WithCoalescing).
const defaultCoalescing = 2

// WithCoalescing sets how many decisions the store sends alone at once
// before later ones queue to share round trips; n = 0 turns coalescing off.
// The default is 2.
// A decision here is a Decide or a DecideSet (a Stack's decision).
//
// While nothing is queued and fewer than n decisions are in flight alone, a
// decision is sent on its own, at once, exactly as without coalescing, so a
// caller alone waits for nothing. Otherwise it queues, and at most two
// goroutines send the queue, everything queued in each round trip: on
// standalone Redis (or Sentinel) one script call per algorithm decides the
// batch's single decisions, and one per list of kinds its sets, each
// reading TIME once. On Redis Cluster each master has a queue of its own,
// with its own two goroutines, and its batch is one script call per
// algorithm (or list of kinds) and hash slot, pipelined: a master that is
// down or stalled delays and fails only the decisions on its own keys. Each
// decision is as atomic as alone, a set's all or nothing: the script
// decides the batch's decisions one after another, each seeing the state
// the previous left. A round trip that fails reports the error to each
// decision in it; an error on one key (a foreign value, say) fails only
// that decision. A caller whose ctx ends while it waits returns at once
// with ctx's error; its decision may still be made.
//
// With a client that resends (see CheckClient), the decisions of GCRA, the
// token bucket and the fixed window on one key are sent one call at a time:
// a decision whose key has a call in flight waits for it and joins the next
// call. Each call is recorded in the state's own value, so that a resend is
// applied once without a key of its own (docs/redis.md, "Retries and
// request IDs").
//
// A charging Decide or DecideSet that carries the caller's request ID
// (ratewise.WithRequestID), whose reply carries its limits, always takes
// its own round trip, as do Reserve, Refund and Reset. Clients other
// than *redis.Client and *redis.ClusterClient, such as *redis.Ring, are
// never coalesced, and neither is a store with WithReplicas, whose every
// script is followed by its own WAIT on its connection.
func WithCoalescing(n int) Option {
	return optionFunc(func(s *Store) { s.coalesce = max(n, 0) })
}

// maxBatch is the most states one script call decides (a set's decision
// counts each of its limits): a batch blocks Redis while it runs, like any
// script, so a long queue is split into several calls, still sent in one
// round trip.
const maxBatch = 128

// newCoalescer returns the store's coalescer on client, or nil for a
// client other than a *redis.Client or a *redis.ClusterClient: on a
// cluster, ops queue by the master that serves their key (see master).
func (s *Store) newCoalescer(client redis.Scripter) *coalesce.Coalescer[batched] {
	switch c := client.(type) {
	case *redis.Client:
		return coalesce.New(s.coalesce, 0, s.sendBatch, nil)
	case *redis.ClusterClient:
		return coalesce.New(s.coalesce, 0, s.sendBatch, func(o batched) string { return master(c, o.req().rkeys[0]) })
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

// batched is an op that may share its round trip: a decision or a set's
// decision. The coalescer queues the op itself, and sendBatch sets its
// outcome (its request's err, then its Result or Results).
type batched interface {
	op
	// shares reports whether the op may share its round trip now that do
	// has given it its request ID (see request.shares).
	shares() bool
	// family names the script calls the op may join: a batch's ops of one
	// family, and on a cluster of one hash slot, share a call.
	family() string
	// newCall returns an empty script call of the op's family.
	newCall(clientTime bool, horizon int64) call
}

// call is one script call of a batch: the ops of one family, and on a
// cluster of one hash slot, that have been through do's steps up to the
// run. Its parse reads the whole call's reply into each op's outcome.
type call interface {
	parser
	script() (*redis.Script, error)
	// keysAndArgs returns KEYS and ARGV.
	keysAndArgs() ([]string, []any)
	// add appends an op of the call's family, and states returns how many
	// states the call decides so far.
	add(o batched)
	states() int
	// fail sets err as the outcome of every op of the call.
	fail(err error)
}

// batchOf is what every call holds: its ops, of one type, and what is
// common to them.
type batchOf[O batched] struct {
	ops        []O
	n          int   // the ops' states
	clientTime bool  // each op sends its own now
	horizon    int64 // µs a once key lives at least (Store.horizon)
}

// add requires o to be of the call's family, and so an O.
func (b *batchOf[O]) add(o batched) {
	b.ops = append(b.ops, o.(O))
	b.n += len(o.req().rkeys)
}

func (b *batchOf[O]) states() int { return b.n }

func (b *batchOf[O]) fail(err error) {
	for _, o := range b.ops {
		o.req().err = err
	}
}

// sendBatch decides every op of ops in one round trip and sets its
// outcome: the coalescer's send. The batch's ops are grouped by family
// (a decision's kind, a set's kinds), and on a cluster by hash slot, at
// most maxBatch states to a group, and each group is one script call.
func (s *Store) sendBatch(ctx context.Context, ops []batched) {
	if s.writers != nil {
		if keys := s.recordedKeys(ops); len(keys) > 0 {
			// Once no call on the keys it records is in flight (see
			// writers.go).
			if err := s.writers.acquire(ctx, keys); err != nil {
				for _, o := range ops {
					o.req().err = err
				}
				return
			}
			defer s.writers.release(keys)
		}
	}
	s.sendCalls(ctx, ops)
}

// sendCalls is sendBatch once its recorded keys are free: it groups ops in
// script calls, gives each call that records a writer, and runs them.
func (s *Store) sendCalls(ctx context.Context, ops []batched) {
	type callID struct {
		family string
		slot   int
	}
	_, cluster := s.client.(*redis.ClusterClient)
	var calls []call
	index := map[callID]call{}
	for _, o := range ops {
		slot := 0
		if cluster {
			slot = hashslot.Of(o.req().rkeys[0])
		}
		id := callID{o.family(), slot}
		c := index[id]
		if c == nil || c.states()+len(o.req().rkeys) > maxBatch {
			c = o.newCall(s.clientTime, s.horizon)
			index[id] = c
			calls = append(calls, c)
		}
		c.add(o)
	}
	deadline, _ := ctx.Deadline()
	for _, c := range calls {
		if d, ok := c.(*decideCall); ok && s.recorded(d.ops[0]) {
			d.writer, d.clock = s.writers.writer(deadline), &s.writers.clock
		}
	}
	cmds, err := s.runBatch(ctx, calls)
	for i, c := range calls {
		settle(c, cmds, i, err)
	}
}

// runBatch is the run step of a batch: one script call per call,
// pipelined when there are several, and sent again with EVAL, once, for
// the calls whose script Redis did not have cached. It returns each
// call's cmd, which holds its reply or error, or an error when a script
// could not be assembled.
func (s *Store) runBatch(ctx context.Context, calls []call) ([]*redis.Cmd, error) {
	run := make([]*redis.Script, len(calls))
	keys := make([][]string, len(calls))
	args := make([][]any, len(calls))
	for i, c := range calls {
		var err error
		if run[i], err = c.script(); err != nil {
			return nil, err
		}
		keys[i], args[i] = c.keysAndArgs()
	}
	cmds := make([]*redis.Cmd, len(calls))
	exec := func(eval bool, only []int) {
		send := func(c redis.Scripter, i int) {
			if eval {
				cmds[i] = run[i].Eval(ctx, c, keys[i], args[i]...)
			} else {
				cmds[i] = run[i].EvalSha(ctx, c, keys[i], args[i]...)
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
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	exec(false, all)
	var missing []int
	for i, cmd := range cmds {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		exec(true, missing)
	}
	return cmds, nil
}

// settle sets the outcome of each op of call i from its reply in cmds, or
// to err when a script could not be assembled, or to the call's error when
// its round trip failed.
func settle(c call, cmds []*redis.Cmd, i int, err error) {
	if err == nil {
		if err = cmds[i].Err(); err == nil {
			err = parse(c, cmds[i].Val())
		}
	}
	if err != nil {
		c.fail(err)
	}
}

// decideCall is the script call of a batch's decisions of one algorithm
// kind (decide_batch.lua).
type decideCall struct {
	batchOf[*decision]
	kind   *algorithms.Kind
	writer string       // the call's writer, if it records its decisions (see writers.go)
	clock  *serverClock // learns Redis's clock from the call's reply, with a writer
}

func (d *decision) family() string { return d.alg.Kind().String() }

func (d *decision) newCall(clientTime bool, horizon int64) call {
	return &decideCall{batchOf: batchOf[*decision]{clientTime: clientTime, horizon: horizon}, kind: d.alg.Kind()}
}

func (c *decideCall) script() (*redis.Script, error) { return scripts.Batch(c.kind) }

// keysAndArgs returns the call's KEYS, each decision's state and then the
// once keys of those that have one, and its ARGV: each distinct parameter
// set once, then for each decision the index of its set, its cost, the
// index of its once key in KEYS (0 for none) and in client-time mode its
// now.
func (c *decideCall) keysAndArgs() ([]string, []any) {
	first := c.ops[0]
	width := paramCount(first.alg)
	var sets []stepParams
	index := make([]int, len(c.ops))
	for i, d := range c.ops {
		ps := paramsAt(d.alg, d.now)
		j := slices.Index(sets, ps)
		if j < 0 {
			j = len(sets)
			sets = append(sets, ps)
		}
		index[i] = j + 1
	}
	keys := make([]string, len(c.ops), 2*len(c.ops))
	args := make([]any, 0, 4+width*len(sets)+4*len(c.ops))
	args = append(args, first.at, c.horizon, c.writer, len(sets), width)
	for _, ps := range sets {
		for _, v := range ps.v[:ps.n] {
			args = append(args, v)
		}
	}
	for i, d := range c.ops {
		keys[i] = d.rkeys[0]
		onceIndex := 0
		if once := d.once(); once != "" {
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

// parse reads decide_batch.lua's reply: five fields for each decision, in
// order, read by the decision itself (inBatch); a decision whose script
// raised an error replies -1 and the message, and fails alone.
func (c *decideCall) parse(reply any) error {
	fields, ok := reply.([]any)
	if !ok || len(fields) != 5*len(c.ops) {
		return fmt.Errorf("want %d values (reply %v)", 5*len(c.ops), reply)
	}
	for i, d := range c.ops {
		f := fields[5*i : 5*i+5]
		switch f[0] {
		case int64(-1):
			d.err = fmt.Errorf("%w: %v", store.ErrUnavailable, f[1])
			continue
		case int64(-2):
			// Refused past its deadline: an earlier attempt may have run.
			d.err = storecheck.MaybeDecided(fmt.Errorf("%w: %v", store.ErrUnavailable, f[1]))
			continue
		}
		d.err = parse(inBatch{d}, f)
		if d.err == nil && c.clock != nil && !c.clientTime {
			c.clock.saw(d.res.At.UnixMicro())
		}
	}
	return nil
}
