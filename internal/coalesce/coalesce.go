// Package coalesce shares round trips between concurrent calls. While
// nothing is queued and fewer than a limit are in flight, a call goes alone,
// at once, and its caller waits for nothing; otherwise it queues, and at
// most two goroutines per queue send everything queued in each round trip.
//
// It knows nothing of what a call is or how it is sent: its user hands it a
// send function, which makes one round trip for a batch of calls and sets
// each call's outcome, and optionally a function that names the queue a
// call joins. Both stores on a server use it: storeredis sends a batch as
// one script call and gives each Redis Cluster master a queue of its own,
// so that a master that fails or stalls holds up only its own calls;
// storepostgres sends a batch as one call of a kind's batch function, in
// one transaction, with a queue per kind.
package coalesce

import (
	"context"
	"sync"
	"time"
)

// drainers is how many goroutines send a queue's batches at once, so that
// the server runs one batch while the next is written and the last read.
const drainers = 2

// Coalescer shares round trips between concurrent calls of type C. It is
// safe for concurrent use.
type Coalescer[C any] struct {
	send     func(ctx context.Context, calls []C)
	queueOf  func(C) string // nil: one queue
	limit    int            // calls sent alone at once before calls queue
	maxBatch int            // the most calls a batch holds; 0 for no bound

	mu       sync.Mutex
	inFlight int                  // calls sent alone; requires mu
	waiting  int                  // batches not yet taken, in every queue; requires mu
	single   queue[C]             // the only queue without queueOf; requires mu
	queues   map[string]*queue[C] // queues by name, while in use; requires mu
	closed   bool                 // Close was called; requires mu
	sent     Counts               // requires mu

	drainers sync.WaitGroup // the goroutines sending queues
}

// Counts is what a coalescer has sent since it was made.
type Counts struct {
	// Batches is how many round trips sent queued calls, and Batched how
	// many calls they sent.
	Batches, Batched int64
}

// queue is the calls waiting for round trips and the goroutines sending
// them. Its fields require the coalescer's mu.
type queue[C any] struct {
	name     string
	queued   []*batch[C] // the batches not yet taken, oldest first
	draining int         // goroutines sending the queue
}

// batch is calls that share one round trip. calls is appended to under the
// coalescer's mu until the batch is taken to be sent; done is closed when
// send has returned.
type batch[C any] struct {
	calls []C
	// latest is the latest of the calls' deadlines, and unbounded whether
	// one has none (see context).
	latest    time.Time
	unbounded bool
	done      chan struct{}
}

// New returns a coalescer that sends up to limit calls alone at once, and
// sends queued calls in batches of at most maxBatch (0 for no bound) with
// send. send makes one round trip for the calls it is given, in the order
// they queued, and sets the outcome of each in calls; its ctx ends at the
// latest of the calls' deadlines, if every one has one. queueOf, if not
// nil, names the queue a call joins: each queue has goroutines of its own.
func New[C any](limit, maxBatch int, send func(ctx context.Context, calls []C), queueOf func(C) string) *Coalescer[C] {
	return &Coalescer[C]{
		send:     send,
		queueOf:  queueOf,
		limit:    limit,
		maxBatch: max(maxBatch, 0),
		queues:   map[string]*queue[C]{},
	}
}

// Ticket is a queued call's place in its batch.
type Ticket[C any] struct {
	b *batch[C]
	i int
}

// Join queues c, with the deadline of its caller's context (zero for
// none), and returns its ticket; or returns false when c may go alone, at
// once, which its caller must then report with Sent. A call goes alone
// while nothing is queued and fewer than the limit are in flight; once one
// queues, the rest queue behind it, each in its queue, and up to two
// goroutines per queue send it, a batch per round trip, until it is empty.
// After Close, every call goes alone.
func (co *Coalescer[C]) Join(c C, deadline time.Time) (Ticket[C], bool) {
	co.mu.Lock()
	if co.closed || co.waiting == 0 && co.inFlight < co.limit {
		co.inFlight++
		co.mu.Unlock()
		return Ticket[C]{}, false
	}
	q := &co.single
	if co.queueOf != nil {
		// queueOf may take its time (a cluster client reads its slots,
		// loading them if it has none yet), so it runs outside mu;
		// queuing is right however the coalescer changed meanwhile.
		co.mu.Unlock()
		name := co.queueOf(c)
		co.mu.Lock()
		if q = co.queues[name]; q == nil {
			q = &queue[C]{name: name}
			co.queues[name] = q
		}
	}
	defer co.mu.Unlock()
	if co.closed {
		// Closed while queueOf ran: nothing drains queues any more.
		co.inFlight++
		return Ticket[C]{}, false
	}
	n := len(q.queued)
	if n == 0 || co.maxBatch > 0 && len(q.queued[n-1].calls) >= co.maxBatch {
		q.queued = append(q.queued, &batch[C]{done: make(chan struct{})})
		co.waiting++
		n++
	}
	b := q.queued[n-1]
	b.calls = append(b.calls, c)
	if deadline.IsZero() {
		b.unbounded = true
	} else if deadline.After(b.latest) {
		b.latest = deadline
	}
	if q.draining < drainers {
		q.draining++
		co.drainers.Add(1)
		go co.drain(q)
	}
	return Ticket[C]{b, len(b.calls) - 1}, true
}

// Sent ends a round trip that a caller made alone.
func (co *Coalescer[C]) Sent() {
	co.mu.Lock()
	co.inFlight--
	co.mu.Unlock()
}

// Wait returns the call as send left it, once its batch is sent, or ctx's
// error if ctx ends first: the call may still be sent.
func (t Ticket[C]) Wait(ctx context.Context) (C, error) {
	select {
	case <-t.b.done:
		return t.b.calls[t.i], nil
	case <-ctx.Done():
		var zero C
		return zero, ctx.Err()
	}
}

// drain sends what q queues, a batch per round trip, until nothing is, and
// forgets a named queue when it is idle: a cluster's masters come and go
// with failovers.
func (co *Coalescer[C]) drain(q *queue[C]) {
	defer co.drainers.Done()
	for {
		co.mu.Lock()
		if len(q.queued) == 0 {
			q.draining--
			if q.draining == 0 && q != &co.single {
				delete(co.queues, q.name)
			}
			co.mu.Unlock()
			return
		}
		b := q.queued[0]
		q.queued[0] = nil
		q.queued = q.queued[1:]
		co.waiting--
		co.sent.Batches++
		co.sent.Batched += int64(len(b.calls))
		co.mu.Unlock()
		ctx, cancel := b.context()
		co.send(ctx, b.calls)
		cancel()
		close(b.done)
	}
}

// context is the context a batch is sent with: no caller's own, since a
// caller that gives up must not fail the others, but the latest of their
// deadlines if every one has one, after which none is waiting.
func (b *batch[C]) context() (context.Context, context.CancelFunc) {
	if b.unbounded || b.latest.IsZero() {
		return context.Background(), func() {}
	}
	return context.WithDeadline(context.Background(), b.latest)
}

// Close makes every later call go alone, and waits until the goroutines
// sending queued calls have sent them all and returned. A nil Coalescer
// has nothing to close.
func (co *Coalescer[C]) Close() {
	if co == nil {
		return
	}
	co.mu.Lock()
	co.closed = true
	co.mu.Unlock()
	co.drainers.Wait()
}

// Counts returns what the coalescer has sent in batches since it was
// made: nothing for a nil Coalescer.
func (co *Coalescer[C]) Counts() Counts {
	if co == nil {
		return Counts{}
	}
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.sent
}

// Stats returns how many calls are in flight alone, how many are queued
// and not yet taken to be sent, and how many goroutines send queued calls,
// so that tests can sequence concurrent callers.
func (co *Coalescer[C]) Stats() (alone, queued, senders int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	count := func(q *queue[C]) {
		for _, b := range q.queued {
			queued += len(b.calls)
		}
		senders += q.draining
	}
	count(&co.single)
	for _, q := range co.queues {
		count(q)
	}
	return co.inFlight, queued, senders
}
