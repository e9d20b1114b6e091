package storeredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
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
// request ID (store.WithRequestID), whose reply carries its limit; Reserve,
// Refund, DecideSet, Reset and TTL always take their own round trip. Clients other than *redis.Client and
// *redis.ClusterClient, such as *redis.Ring, are never coalesced, and
// neither is a store with WithReplicas, whose every script is followed by
// its own WAIT on its connection.
func WithCoalescing(n int) Option {
	return optionFunc(func(s *Store) { s.coalesce = max(n, 0) })
}

// drainers is how many goroutines send a queue's batches at once, so that
// Redis runs one batch while the next is written and the last read.
const drainers = 2

// maxBatch is the most decisions one script call makes: a batch blocks
// Redis while it runs, like any script, so a long queue is split into
// several calls, still sent in one round trip.
const maxBatch = 128

// coalescer shares round trips between concurrent decisions (see
// WithCoalescing).
//
// A cluster's decisions queue by the master that serves their key, as the
// client's view of the slots has it when they join: a batch is then one
// node's round trip, and a queue's goroutines wait only for their node, so
// a node that fails or stalls (go-redis retries a dead node's share of a
// pipeline before the pipeline returns) holds up neither the decisions of
// other nodes that would have shared its batch nor the goroutines that
// send theirs. A key whose slot moved after it joined is still decided in
// its batch: the pipeline routes each script call by its slot.
type coalescer struct {
	client     Client
	cluster    *redis.ClusterClient // nil unless the client is one
	clientTime bool                 // each decision sends its own now
	horizon    int64                // µs a once key lives at least (Store.horizon)
	limit      int                  // decisions sent alone at once before decisions queue

	mu       sync.Mutex
	inFlight int               // decisions sent alone; requires mu
	waiting  int               // queues whose batch is not yet taken; requires mu
	single   queue             // the only queue of a client other than a cluster's; requires mu
	nodes    map[string]*queue // a cluster's queues by master address ("" when unknown), while in use; requires mu
}

// queue is the decisions waiting for one node's next round trip and the
// goroutines sending them. Its fields require the coalescer's mu.
type queue struct {
	node     string
	queued   *batch // nil when nothing waits
	draining int    // goroutines sending the queue
}

// batch is decisions that share one round trip. calls is appended to under
// the coalescer's mu until the batch is taken to be sent; done is closed
// when each call's res or err is set.
type batch struct {
	calls []call
	done  chan struct{}
}

type call struct {
	key       string // the Redis key
	once      string // its once key, or ""
	alg       algorithms.Algorithm
	at        any // ARGV's now: serverTime, or µs in client-time mode
	notBefore int64
	cost      int64
	deadline  time.Time // zero for none
	res       algorithms.Result
	err       error
}

func newCoalescer(client Client, limit int, clientTime bool, horizon int64) *coalescer {
	switch c := client.(type) {
	case *redis.Client:
		return &coalescer{client: client, limit: limit, clientTime: clientTime, horizon: horizon}
	case *redis.ClusterClient:
		return &coalescer{client: client, cluster: c, limit: limit, clientTime: clientTime, horizon: horizon, nodes: map[string]*queue{}}
	}
	return nil
}

// join returns nil when the caller may send its decision alone, which it
// must then report with sent; otherwise it queues c and returns the batch
// it joined and its index there. A decision goes alone while nothing is
// queued and fewer than the limit are in flight; once one queues, the rest
// queue behind it, on a cluster in their master's queue, and up to
// drainers goroutines per queue send it, a batch per round trip, until it
// is empty.
func (co *coalescer) join(c call) (*batch, int) {
	co.mu.Lock()
	if co.waiting == 0 && co.inFlight < co.limit {
		co.inFlight++
		co.mu.Unlock()
		return nil, 0
	}
	q := &co.single
	if co.cluster != nil {
		// The lookup reads the client's cached slots (it loads them if it
		// has none yet), outside mu; queuing is right however the
		// coalescer changed meanwhile.
		co.mu.Unlock()
		node := co.master(c.key)
		co.mu.Lock()
		if q = co.nodes[node]; q == nil {
			q = &queue{node: node}
			co.nodes[node] = q
		}
	}
	defer co.mu.Unlock()
	if q.queued == nil {
		q.queued = &batch{done: make(chan struct{})}
		co.waiting++
	}
	b := q.queued
	b.calls = append(b.calls, c)
	if q.draining < drainers {
		q.draining++
		go co.drain(q)
	}
	return b, len(b.calls) - 1
}

// master is the address of the cluster node serving key, or "" if the
// client cannot tell.
func (co *coalescer) master(key string) string {
	node, err := co.cluster.MasterForKey(context.Background(), key)
	if err != nil {
		return ""
	}
	return node.Options().Addr
}

// sent ends a round trip that a caller made alone.
func (co *coalescer) sent() {
	co.mu.Lock()
	co.inFlight--
	co.mu.Unlock()
}

// drain sends what q queues, a batch per round trip, until nothing is, and
// forgets a cluster node's queue when it is idle: nodes come and go with
// failovers.
func (co *coalescer) drain(q *queue) {
	for {
		co.mu.Lock()
		b := q.queued
		if b == nil {
			q.draining--
			if q.draining == 0 && q != &co.single {
				delete(co.nodes, q.node)
			}
			co.mu.Unlock()
			return
		}
		q.queued = nil
		co.waiting--
		co.mu.Unlock()
		co.send(b)
		close(b.done)
	}
}

// group is the calls of a batch that one script call decides: one
// algorithm kind, and on a cluster one hash slot.
type group struct {
	kind  *algorithms.Kind
	slot  int
	calls []int // indexes into the batch
	cmd   *redis.Cmd
}

// send decides every call of b in one round trip and sets its res or err.
func (co *coalescer) send(b *batch) {
	type groupID struct {
		kind *algorithms.Kind
		slot int
	}
	var groups []*group
	index := map[groupID]*group{}
	for i := range b.calls {
		c := &b.calls[i]
		slot := 0
		if co.cluster != nil {
			slot = keySlot(c.key)
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
	ctx, cancel := batchContext(b.calls)
	defer cancel()
	err := co.run(ctx, b, groups)
	for _, g := range groups {
		co.settle(b, g, err)
	}
}

// batchContext is the context a batch is sent with: no caller's own, since
// a caller that gives up must not fail the others, but the latest of their
// deadlines if every one has one, after which none is waiting.
func batchContext(calls []call) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range calls {
		if c.deadline.IsZero() {
			return context.Background(), func() {}
		}
		if c.deadline.After(latest) {
			latest = c.deadline
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// run sends one script call per group, pipelined when there are several,
// and sends again with EVAL, once, the calls whose script Redis did not
// have cached. Each group's reply or error is then in its cmd; an error is
// returned only when a script could not be assembled.
func (co *coalescer) run(ctx context.Context, b *batch, groups []*group) error {
	run := make([]*redis.Script, len(groups))
	args := make([][]any, len(groups))
	keys := make([][]string, len(groups))
	for i, g := range groups {
		var err error
		if run[i], err = scripts.Batch(g.kind); err != nil {
			return err
		}
		keys[i], args[i] = batchArgs(b, g, co.clientTime, co.horizon)
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
			send(co.client, only[0])
			return
		}
		pipe := co.client.(interface{ Pipeline() redis.Pipeliner }).Pipeline()
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
func batchArgs(b *batch, g *group, clientTime bool, horizon int64) ([]string, []any) {
	first := &b.calls[g.calls[0]]
	width := paramCount(first.alg)
	var sets []algorithms.Params
	var algs []algorithms.Algorithm // one of each set
	index := make([]int, len(g.calls))
	for i, ci := range g.calls {
		alg := b.calls[ci].alg
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
		c := &b.calls[ci]
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
func (co *coalescer) settle(b *batch, g *group, err error) {
	if err == nil {
		err = g.cmd.Err()
	}
	if err != nil {
		for _, ci := range g.calls {
			b.calls[ci].err = err
		}
		return
	}
	fields, ok := g.cmd.Val().([]any)
	if !ok || len(fields) != 5*len(g.calls) {
		err := fmt.Errorf("%w: %w: want %d values (reply %v)", store.ErrUnavailable, ErrMalformedReply, 5*len(g.calls), g.cmd.Val())
		for _, ci := range g.calls {
			b.calls[ci].err = err
		}
		return
	}
	for i, ci := range g.calls {
		c := &b.calls[ci]
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

// keySlot is the Redis Cluster hash slot of a key the store wrote (see
// Store.Key): the CRC16 of its hash tag, the escaped caller's key between
// the first "{" and the "}" after it, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % 16384)
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
