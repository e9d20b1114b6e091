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
	send    func(ctx context.Context, calls []C)
	queueOf func(C) string // nil: one queue
	limit   int            // calls sent alone at once before calls queue

	mu       sync.Mutex
	inFlight int                  // calls sent alone; requires mu
	waiting  int                  // queues whose batch is not yet taken; requires mu
	single   queue[C]             // the only queue without queueOf; requires mu
	queues   map[string]*queue[C] // queues by name, while in use; requires mu
}

// queue is the calls waiting for one round trip and the goroutines sending
// them. Its fields require the coalescer's mu.
type queue[C any] struct {
	name     string
	queued   *batch[C] // nil when nothing waits
	draining int       // goroutines sending the queue
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
// sends queued calls in batches with send. send makes one round trip for
// the calls it is given, in the order they queued, and sets the outcome of
// each in calls; its ctx ends at the latest of the calls' deadlines, if
// every one has one. queueOf, if not nil, names the queue a call joins:
// each queue has goroutines of its own.
func New[C any](limit int, send func(ctx context.Context, calls []C), queueOf func(C) string) *Coalescer[C] {
	return &Coalescer[C]{send: send, queueOf: queueOf, limit: limit, queues: map[string]*queue[C]{}}
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
func (co *Coalescer[C]) Join(c C, deadline time.Time) (Ticket[C], bool) {
	co.mu.Lock()
	if co.waiting == 0 && co.inFlight < co.limit {
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
	if q.queued == nil {
		q.queued = &batch[C]{done: make(chan struct{})}
		co.waiting++
	}
	b := q.queued
	b.calls = append(b.calls, c)
	if deadline.IsZero() {
		b.unbounded = true
	} else if deadline.After(b.latest) {
		b.latest = deadline
	}
	if q.draining < drainers {
		q.draining++
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
	for {
		co.mu.Lock()
		b := q.queued
		if b == nil {
			q.draining--
			if q.draining == 0 && q != &co.single {
				delete(co.queues, q.name)
			}
			co.mu.Unlock()
			return
		}
		q.queued = nil
		co.waiting--
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

// Stats returns how many calls are in flight alone, how many are queued
// and not yet taken to be sent, and how many goroutines send queued calls,
// so that tests can sequence concurrent callers.
func (co *Coalescer[C]) Stats() (alone, queued, senders int) {
	co.mu.Lock()
	defer co.mu.Unlock()
	count := func(q *queue[C]) {
		if q.queued != nil {
			queued += len(q.queued.calls)
		}
		senders += q.draining
	}
	count(&co.single)
	for _, q := range co.queues {
		count(q)
	}
	return co.inFlight, queued, senders
}
