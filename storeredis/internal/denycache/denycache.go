// Package denycache remembers recent denials of cost 1, so that a store can
// deny a request that a denial still covers without asking its backend
// (storeredis.WithDenyCache documents when that is right). It knows nothing
// of Redis: a state is named by an opaque key, and times are µs on a clock
// the caller chooses.
package denycache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

const shards = 16

// Cache remembers recent denials of cost 1. It is safe for concurrent use.
type Cache struct {
	seed       maphash.Seed
	clientTime bool // the clock is the caller's now (see New)
	shards     [shards]shard
}

type shard struct {
	mu sync.Mutex
	// entries and limit require mu held.
	entries map[string]denial
	limit   int
	// n is len(entries), written under mu, so that a shard with nothing
	// remembered, the usual case, is passed without the lock.
	n atomic.Int64
	// gen counts Forget calls, so that a denial decided before a reset
	// and remembered after it is not kept.
	gen atomic.Uint64
	_   [32]byte // keeps neighbouring shards' mutexes off one cache line
}

// denial is a remembered denial of cost 1. Times are µs on the cache's
// clock (the caller's now in client-time mode, else Monotonic): until is
// when the key admits again, reset when its state stops counting; at is the
// earliest time the denial answers for, and skew what to add to a time on
// the cache's clock for the time the store would report deciding at.
type denial struct {
	params       algorithms.Params
	at, skew     int64
	until, reset int64
}

// New returns a cache that remembers about n denials, at least one per
// shard. With clientTime, its clock is the caller's now, and a remembered
// denial answers only a request at or after the decision's own time;
// otherwise it is Monotonic.
func New(n int, clientTime bool) *Cache {
	c := &Cache{seed: maphash.MakeSeed(), clientTime: clientTime}
	for i := range c.shards {
		c.shards[i].entries = make(map[string]denial)
		c.shards[i].limit = max(n/shards, 1)
	}
	return c
}

func (c *Cache) shard(key string) *shard {
	return &c.shards[maphash.String(c.seed, key)%shards]
}

// monoStart is where Monotonic counts from.
var monoStart = time.Now()

// Monotonic is the local clock in µs, read from one fixed start, so that a
// change to the wall clock does not move it.
func Monotonic() int64 { return int64(time.Since(monoStart) / time.Microsecond) }

// Deny returns the Result of a remembered denial of the state key names,
// for a request of cost 1 under alg at clock time t (µs), if one still
// holds. key is only read, so that a caller can look up a key it has built
// in a buffer of its own: a hit allocates nothing.
func (c *Cache) Deny(key []byte, alg algorithms.Algorithm, t int64) (algorithms.Result, bool) {
	sh := &c.shards[maphash.Bytes(c.seed, key)%shards]
	if sh.n.Load() == 0 {
		return algorithms.Result{}, false
	}
	sh.mu.Lock()
	d, ok := sh.entries[string(key)]
	sh.mu.Unlock()
	if !ok || t < d.at || t >= d.until || d.params != algo.ParamsOf(alg) {
		return algorithms.Result{}, false
	}
	return algorithms.Result{
		Limit:      algo.MaxCost(alg),
		RetryAfter: time.Duration(d.until-t) * time.Microsecond,
		ResetAfter: time.Duration(max(d.reset-t, 0)) * time.Microsecond,
		At:         time.UnixMicro(t + d.skew),
	}, true
}

// Generation returns the key's shard's count of Forget calls, read before
// a request is sent, for Remember.
func (c *Cache) Generation(key string) uint64 {
	return c.shard(key).gen.Load()
}

// Remember records res, a decision of cost under alg that the backend made
// for a request sent at clock time sent (µs), when it is a denial of cost
// 1. Any other decision may have changed the state (an admission, or a
// denial of a larger cost that moved its latest time or carried it over to
// another limit), so it drops what was remembered for it. gen is Generation's value before the request was
// sent: if the key's shard was reset since, nothing is kept.
func (c *Cache) Remember(key string, alg algorithms.Algorithm, res algorithms.Result, cost, sent int64, gen uint64) {
	sh := c.shard(key)
	keep := !res.Allowed && cost == 1
	if !keep && sh.n.Load() == 0 {
		return // nothing to drop
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !keep || sh.gen.Load() != gen {
		delete(sh.entries, key)
		sh.n.Store(int64(len(sh.entries)))
		return
	}
	// RetryAfter and ResetAfter count from the request's now.
	d := denial{
		params: algo.ParamsOf(alg),
		at:     sent,
		until:  sent + res.RetryAfter.Microseconds(),
		reset:  sent + res.ResetAfter.Microseconds(),
	}
	if c.clientTime {
		// A now behind the key's latest time is decided at that time, so
		// only a request at or after the decision's own time is answered
		// here: the backend would decide it at its now.
		d.at = res.At.UnixMicro()
	} else {
		d.skew = res.At.UnixMicro() - sent
	}
	if _, ok := sh.entries[key]; !ok && len(sh.entries) >= sh.limit {
		for old := range sh.entries { // full: drop one, any
			delete(sh.entries, old)
			break
		}
	}
	sh.entries[key] = d
	sh.n.Store(int64(len(sh.entries)))
}

// Forget drops what is remembered for key, before a change the caller
// makes to its state other than a decision.
func (c *Cache) Forget(key string) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.entries, key)
	sh.n.Store(int64(len(sh.entries)))
	sh.gen.Add(1)
}

// Len returns how many denials the cache remembers.
func (c *Cache) Len() int {
	n := 0
	for i := range c.shards {
		n += int(c.shards[i].n.Load())
	}
	return n
}
