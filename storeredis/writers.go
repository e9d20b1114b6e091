package storeredis

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Writers' records: how a store whose client resends (see once.go) applies
// each of its decisions once without a key per write. It applies to the
// decisions it coalesces (WithCoalescing, on by default) of the kinds that
// keep their state in one string: GCRA, the token bucket and the fixed
// window.
//
// The store numbers the script calls that carry such decisions in the order
// it sends them, and sends a call on a key only after the last call on that
// key has returned (its gate). Each call names its writer: the store's 8
// random bytes and the call's number. Every key the call writes keeps, in
// its own value and next to its state, one record per store: the number of
// the store's last call that wrote it, the state that call found, and the
// time it decided at (internal/scripts/rec.lua). When go-redis sends a call
// again, its script finds its own number and decides the key again from the
// state and the time the record keeps, which gives the first outcome and
// writes nothing; a number below the record's is an attempt of a call that
// has returned, delayed in the network, and is refused. A record lives as
// long as go-redis may resend (resendHorizon), and is dropped by the first
// script that touches the key after that.
//
// So a key holds one record per store that wrote it within the horizon,
// whatever the traffic, and an admission costs EVALSHA, TIME, GET and SET,
// as without records. A key's calls from one store do not overlap: on a hot
// key every caller's decision waits for the call in flight and joins the
// next, which the coalescer fills.

// A call whose caller has a deadline also carries it, on Redis's clock: a
// call that reaches Redis after it is refused, without effect, so its
// records need to live only until then, not for the whole horizon. The
// store knows Redis's clock from the times its replies were decided at
// (serverClock); a deadline it cannot place, it leaves out.

// writers is what a store that records its calls keeps: its random bytes,
// its calls' numbers, the keys with a call in flight, and what it knows of
// Redis's clock.
type writers struct {
	id    [8]byte
	next  atomic.Uint64
	clock serverClock

	mu   sync.Mutex
	busy map[string]chan struct{} // keys with a call in flight; closed when it returns
}

func newWriters() *writers {
	w := &writers{busy: map[string]chan struct{}{}, clock: serverClock{base: time.Now()}}
	_, _ = rand.Read(w.id[:]) // crypto/rand never fails on the platforms Go supports
	return w
}

// writer returns the next call's writer: the store's bytes, then a number
// above every number it gave before, 7 bytes big-endian, then the call's
// deadline on Redis's clock in µs, 7 bytes, 0 for none.
func (w *writers) writer(deadline time.Time) string {
	var b [24]byte
	copy(b[:8], w.id[:])
	binary.BigEndian.PutUint64(b[8:], w.next.Add(1)) // 2^56 calls before the 7 bytes wrap
	binary.BigEndian.PutUint64(b[16:], uint64(w.clock.at(deadline)))
	return string(b[:8]) + string(b[9:16]) + string(b[17:])
}

// serverClock is what a store knows of Redis's clock: the most Redis's
// clock was ahead of the store's monotonic clock in any reply (a time a
// reply was decided at, less the monotonic time it was read), which is at
// most how far it is ahead, since Redis read its clock before the reply
// arrived.
type serverClock struct {
	base   time.Time    // the store's monotonic clock's zero
	offset atomic.Int64 // µs; 0 until a reply is seen
}

// saw learns from a reply decided at at (µs on Redis's clock).
func (c *serverClock) saw(at int64) {
	sample := at - time.Since(c.base).Microseconds()
	for {
		old := c.offset.Load()
		if old != 0 && old >= sample || c.offset.CompareAndSwap(old, sample) {
			return
		}
	}
}

// at returns deadline on Redis's clock in µs, no later than Redis's clock
// will read when the store's clock reaches it, or 0 for a zero deadline or
// when no reply has been seen.
func (c *serverClock) at(deadline time.Time) int64 {
	off := c.offset.Load()
	if deadline.IsZero() || off == 0 {
		return 0
	}
	return max(deadline.Sub(c.base).Microseconds()+off, 1)
}

// acquire waits until no call is in flight on any of keys, and marks them
// all as in flight: all or none, so two callers never wait on each other.
// It returns ctx's error if ctx ends first, having marked nothing.
func (w *writers) acquire(ctx context.Context, keys []string) error {
	for {
		w.mu.Lock()
		var wait chan struct{}
		for _, k := range keys {
			if ch, ok := w.busy[k]; ok {
				wait = ch
				break
			}
		}
		if wait == nil {
			done := make(chan struct{})
			for _, k := range keys {
				w.busy[k] = done
			}
			w.mu.Unlock()
			return nil
		}
		w.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// release ends the call in flight on keys, which acquire marked.
func (w *writers) release(keys []string) {
	w.mu.Lock()
	var done chan struct{}
	for _, k := range keys {
		if ch, ok := w.busy[k]; ok {
			done = ch
			delete(w.busy, k)
		}
	}
	w.mu.Unlock()
	if done != nil {
		close(done)
	}
}

// recorded reports whether o is a decision the store records in its
// state's value instead of giving it a request ID of its own.
func (s *Store) recorded(o op) bool {
	d, ok := o.(*decision)
	return ok && s.writers != nil && scripts.OneString(d.alg.Kind())
}

// recordedKeys returns the keys of the recorded decisions among ops, each
// once.
func (s *Store) recordedKeys(ops []batched) []string {
	var keys []string
	for _, o := range ops {
		if d, ok := o.(*decision); ok && s.recorded(d) && d.rid.id == "" {
			keys = append(keys, d.rkeys[0])
		}
	}
	return keys
}
