package storeredis

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// DefaultDenyCache is how many denials a store remembers by default (see
// WithDenyCache).
const DefaultDenyCache = 4096

// WithDenyCache sets how many denials the store remembers, to deny again
// without a round trip; n = 0 turns the cache off.
//
// When Redis denies a request of cost 1, the key stays denied to requests
// of cost 1 with the same parameters until its RetryAfter has passed, since
// other instances' decisions can only consume more. Only a write that gives
// units back (a refund, a cancellation, a Reset) or another limit on the
// key (a raised rate, say) can admit one sooner; the cache then errs
// towards denying, never towards admitting. Until then the store answers
// such requests itself, from the denial it remembers: the Result is the one Redis would give if nothing else reached
// the key meanwhile (Remaining 0, RetryAfter and ResetAfter counting down,
// At the decision's time). The time is the caller's now in client-time mode
// (WithClientTime; a now before the remembered decision goes to Redis),
// and otherwise the local monotonic clock, counted from before the request
// was sent, so the cache never denies past the moment Redis would admit.
//
// Requests of another cost or other parameters, inspections, and requests
// that carry the caller's request ID (a retry must get its admission back)
// go to Redis; so does everything after this store resets, refunds, reserves or
// decides a set on the key. What the cache cannot see is a change made by
// another instance or by hand: a Reset or refund elsewhere, a limit raised
// elsewhere, a key deleted in Redis. Until the remembered RetryAfter has
// passed, this store then still denies what Redis would now admit; it never
// admits anything Redis would deny. Denials that no longer fit are dropped
// in any order.
func WithDenyCache(n int) Option {
	return optionFunc(func(s *Store) { s.denyCache = max(n, 0) })
}

const denyShards = 16

// denyCache remembers recent denials of cost 1 (see WithDenyCache).
type denyCache struct {
	seed   maphash.Seed
	shards [denyShards]denyShard
}

type denyShard struct {
	mu sync.Mutex
	// entries and limit require mu held.
	entries map[stateID]denial
	limit   int
	// n is len(entries), written under mu, so that a shard with nothing
	// remembered, the usual case, is passed without the lock.
	n atomic.Int64
	// gen counts forget calls, so that a denial decided before a Reset
	// and remembered after it is not kept.
	gen atomic.Uint64
	_   [32]byte // keeps neighbouring shards' mutexes off one cache line
}

// stateID names one Redis key's state: what Store.Key is built from.
type stateID struct {
	key   string
	kind  *algorithms.Kind
	scope algo.Scope
}

// denial is a remembered denial of cost 1. Times are µs on the cache's
// clock (the caller's now in client-time mode, else monotonic): until is
// when the key admits again, reset when its state stops counting; at is the
// earliest time the denial answers for, and skew what to add to a time on
// the cache's clock for the time Redis would report deciding at.
type denial struct {
	params       algorithms.Params
	at, skew     int64
	until, reset int64
}

func newDenyCache(n int) *denyCache {
	c := &denyCache{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i].entries = make(map[stateID]denial)
		c.shards[i].limit = max(n/denyShards, 1)
	}
	return c
}

func (c *denyCache) shard(key string) *denyShard {
	return &c.shards[maphash.String(c.seed, key)%denyShards]
}

// monotonic is the local clock in µs, read from one fixed start, so that
// a change to the wall clock does not move it.
var monoStart = time.Now()

func monotonic() int64 { return int64(time.Since(monoStart) / time.Microsecond) }

// deny returns the Result of a remembered denial for a request of cost 1
// at clock time t (µs), if one still holds.
func (c *denyCache) deny(key string, alg algorithms.Algorithm, t int64) (algorithms.Result, bool) {
	sh := c.shard(key)
	if sh.n.Load() == 0 {
		return algorithms.Result{}, false
	}
	sh.mu.Lock()
	d, ok := sh.entries[stateID{key, alg.Kind(), algo.ScopeOf(alg)}]
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

// generation returns the key's shard's count of forget calls, read before
// a request is sent, for remember.
func (c *denyCache) generation(key string) uint64 {
	return c.shard(key).gen.Load()
}

// remember records res, a decision of cost that Redis made for a request
// sent at clock time sent (µs), when it is a denial of cost 1. Any other
// decision may have changed the key's state (an admission, or a denial of a
// larger cost that moved its latest time or carried it over to another
// limit), so it drops what was remembered for that state. gen is
// generation's value before the request was sent: if the key's shard was
// reset since, nothing is kept.
func (c *denyCache) remember(key string, alg algorithms.Algorithm, res algorithms.Result, cost, sent int64, clientTime bool, gen uint64) {
	id := stateID{key, alg.Kind(), algo.ScopeOf(alg)}
	sh := c.shard(key)
	keep := !res.Allowed && cost == 1
	if !keep && sh.n.Load() == 0 {
		return // nothing to drop
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !keep || sh.gen.Load() != gen {
		delete(sh.entries, id)
		sh.n.Store(int64(len(sh.entries)))
		return
	}
	// RetryAfter and ResetAfter count from the request's now.
	d := denial{params: algo.ParamsOf(alg), at: sent, until: sent + res.RetryAfter.Microseconds(), reset: sent + res.ResetAfter.Microseconds()}
	if clientTime {
		// A now behind the key's latest time is decided at that time, so
		// only a request at or after the decision's own time is answered
		// here: Redis would decide it at its now.
		d.at = res.At.UnixMicro()
	} else {
		d.skew = res.At.UnixMicro() - sent
	}
	if _, ok := sh.entries[id]; !ok && len(sh.entries) >= sh.limit {
		for old := range sh.entries { // full: drop one, any
			delete(sh.entries, old)
			break
		}
	}
	sh.entries[id] = d
	sh.n.Store(int64(len(sh.entries)))
}

// forget drops what is remembered for key under alg, before a change this
// store makes to its state other than a decision.
func (c *denyCache) forget(key string, alg algorithms.Algorithm) {
	sh := c.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	delete(sh.entries, stateID{key, alg.Kind(), algo.ScopeOf(alg)})
	sh.n.Store(int64(len(sh.entries)))
	sh.gen.Add(1)
}
