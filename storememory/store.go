// Package storememory is the in-memory ratewise store, for unit tests and
// single processes.
//
// It keeps each key's state in one of 256 shards, each holding one map per
// algorithm and scope (see algorithms.Scope) behind its own mutex, so
// unrelated keys rarely contend and there is no global lock. It
// reads no clock: the time of every decision is the now its caller passes, so
// a limiter with an injected clock drives it completely and tests never
// sleep. State expires Result.ResetAfter after the decision that wrote it,
// the moment it can no longer affect a decision; expired entries are dropped,
// ExpiryGrace later, by an incremental sweep that costs O(1) amortised per
// decision, so memory stays bounded under key churn without a background
// goroutine.
package storememory

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

var (
	_ store.Store       = (*Store)(nil)
	_ store.TTLReporter = (*Store)(nil)
	_ store.SetDecider  = (*Store)(nil)
	_ store.Reserver    = (*Store)(nil)
)

const (
	shardCount = 256
	// minSweepOps keeps tiny shards from being swept on every decision.
	minSweepOps = 64
)

// Store is the in-memory store. Its zero value is not usable; call New. It is
// safe for concurrent use.
type Store struct {
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu sync.Mutex
	// tables, opsSinceSweep and sweepAfter require mu held.
	tables        []table
	opsSinceSweep int
	sweepAfter    int
	// Keeps neighbouring shards' mutexes off one cache line.
	_ [64]byte
}

// table holds one algorithm's entries for one scope. A store rarely serves
// more than a few, so a shard finds the table by a linear scan, and the map
// key is the bare key: 16 bytes less per entry than keying by (algorithm,
// key).
type table struct {
	id      tableID
	entries map[string]entry
	// peak is the most entries the table held at a sweep since its map
	// was last made (see sweepIfDue).
	peak int
}

// tableID tells apart state that must never mix: the algorithm and its
// scope.
type tableID struct {
	kind  *algorithms.Kind
	scope algorithms.Scope
}

func idOf(alg algorithms.Algorithm) tableID {
	return tableID{kind: alg.Kind(), scope: alg.Scope()}
}

type entry struct {
	state   algorithms.State
	expires int64 // Unix nanoseconds after which state no longer matters
}

// New returns an empty store.
func New() *Store {
	s := &Store{seed: maphash.MakeSeed()}
	for i := range s.shards {
		s.shards[i].sweepAfter = minSweepOps
	}
	return s
}

func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)%shardCount]
}

// entries returns the table for id, creating it if create is set; nil if
// absent. Requires sh.mu held.
func (sh *shard) entries(id tableID, create bool) map[string]entry {
	for _, t := range sh.tables {
		if t.id == id {
			return t.entries
		}
	}
	if !create {
		return nil
	}
	m := make(map[string]entry)
	sh.tables = append(sh.tables, table{id: id, entries: m})
	return m
}

// len returns the entries in all tables. Requires sh.mu held.
func (sh *shard) len() int {
	n := 0
	for _, t := range sh.tables {
		n += len(t.entries)
	}
	return n
}

// Decide runs alg's decision step on key's state under the key's shard lock.
// It runs every registered algorithm, so it never returns
// store.ErrUnsupported; an invalid algorithm, cost or time is an error from
// algorithms.CheckDecision.
func (s *Store) Decide(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algorithms.CheckDecision(alg, now, cost); err != nil {
		return algorithms.Result{}, err
	}
	id := idOf(alg)
	t := now.UnixNano()
	sh := s.shard(key)

	sh.mu.Lock()
	defer sh.mu.Unlock()
	entries := sh.entries(id, true)
	state, res := alg.Decide(load(entries, key, t), now, cost)
	keep(entries, key, state, res, t, cost)
	sh.sweepIfDue(t)
	return res, nil
}

// load returns key's state in entries, or nil when it has none or its
// state no longer counts at t (Unix nanoseconds).
func load(entries map[string]entry, key string, t int64) algorithms.State {
	if e, ok := entries[key]; ok && e.expires > t {
		return e.state
	}
	return nil
}

// keep records the state a decision of cost at t left, which counts for
// res.ResetAfter. An inspection changes nothing: not even an expired entry
// goes, since a request whose clock reading is behind may still need it.
func keep(entries map[string]entry, key string, state algorithms.State, res algorithms.Result, t, cost int64) {
	switch {
	case cost <= 0:
	case state == nil || res.ResetAfter <= 0:
		delete(entries, key)
	default:
		entries[key] = entry{state: state, expires: t + int64(res.ResetAfter)}
	}
}

// Reserve books a request for key under alg (see store.Reserver), under
// the key's shard lock.
func (s *Store) Reserve(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64, maxWait time.Duration) (algorithms.Result, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err
	}
	r, err := store.CheckReserve(alg, now, cost, maxWait)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	t := now.UnixNano()
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	entries := sh.entries(idOf(alg), true)
	state, res, delay := r.Reserve(load(entries, key, t), now, cost, maxWait)
	keep(entries, key, state, res, t, cost)
	sh.sweepIfDue(t)
	return res, delay, nil
}

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, under the key's shard lock (see store.SetDecider). Every
// algorithm is first inspected as the request (a cost of -cost); the
// request is admitted when each would admit it alone, and only then is each
// charged.
func (s *Store) DecideSet(ctx context.Context, key string, algs []algorithms.Algorithm, now time.Time, cost int64) ([]algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := store.CheckSet(algs, now, cost); err != nil {
		return nil, err
	}
	t := now.UnixNano()
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	results := make([]algorithms.Result, len(algs))
	states := make([]algorithms.State, len(algs))
	all := true
	inspect := min(cost, -cost) // an inspection as the request, which changes nothing
	for i, alg := range algs {
		states[i] = load(sh.entries(idOf(alg), false), key, t)
		_, results[i] = alg.Decide(states[i], now, inspect)
		all = all && results[i].Allowed
	}
	if cost <= 0 {
		return results, nil
	}
	for i, alg := range algs {
		if !all && results[i].Allowed {
			continue // it would admit, but the set does not: not charged
		}
		state, res := alg.Decide(states[i], now, cost)
		keep(sh.entries(idOf(alg), true), key, state, res, t, cost)
		results[i] = res
	}
	sh.sweepIfDue(t)
	return results, nil
}

// Refund gives back n units that a request admitted at time at was charged
// (see store.Refunder), under the key's shard lock.
func (s *Store) Refund(ctx context.Context, key string, alg algorithms.Algorithm, now, at time.Time, n int64) (algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algorithms.CheckRefund(alg, now, at, n); err != nil {
		return algorithms.Result{}, err
	}
	t := now.UnixNano()
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	entries := sh.entries(idOf(alg), false)
	state := load(entries, key, t)
	if state == nil {
		_, res := alg.Decide(nil, now, 0)
		return res, nil
	}
	state, changed := alg.Refund(state, now, at, n)
	_, res := alg.Decide(state, now, 0)
	if changed {
		keep(entries, key, state, res, t, n)
	}
	return res, nil
}

// minShrink is the fewest entries a table must have held at a sweep for a
// later sweep to copy what is left into a smaller map.
const minShrink = 1024

// ExpiryGrace is how long an entry is kept after it stops counting, before
// a sweep may drop it. Decisions treat an entry as gone once its ResetAfter has
// passed on their own clock; the grace keeps it for a request whose clock
// reading lags the one that triggered a sweep (concurrent callers read
// their clocks before the shard lock orders them), which must still see
// it. The Redis store keeps keys ClientTimeGrace longer for the same
// reason.
const ExpiryGrace = time.Second

// sweepIfDue drops expired entries once the shard has seen as many decisions
// as it kept entries after its last sweep. A sweep then visits at most twice
// that many entries, so it costs O(1) amortised per decision, and a shard
// holds at most its live entries plus the decisions since the last sweep.
// The threshold is fixed at sweep time: under churn the map grows with every
// decision, so comparing against its current size would never fire.
// Requires sh.mu held.
func (sh *shard) sweepIfDue(now int64) {
	sh.opsSinceSweep++
	if sh.opsSinceSweep < sh.sweepAfter {
		return
	}
	for i := range sh.tables {
		t := &sh.tables[i]
		t.peak = max(t.peak, len(t.entries))
		for k, e := range t.entries {
			if e.expires <= now-int64(ExpiryGrace) {
				delete(t.entries, k)
			}
		}
		// Go maps never shrink: a table that once held many more keys than
		// it holds now, even if they went over several sweeps, is copied
		// into a map of its present size, so memory comes back after a
		// wave of keys has passed.
		if t.peak >= minShrink && len(t.entries) <= t.peak/4 {
			smaller := make(map[string]entry, len(t.entries))
			for k, e := range t.entries {
				smaller[k] = e
			}
			t.entries, t.peak = smaller, len(smaller)
		}
	}
	sh.opsSinceSweep = 0
	sh.sweepAfter = max(sh.len(), minSweepOps)
}

// Reset forgets alg's state for key.
func (s *Store) Reset(ctx context.Context, key string, alg algorithms.Algorithm) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := algorithms.CheckKind(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	id := idOf(alg)
	sh := s.shard(key)
	sh.mu.Lock()
	delete(sh.entries(id, false), key)
	sh.mu.Unlock()
	return nil
}

// TTL returns how long after now the store keeps alg's state for key, or 0
// if it holds none.
func (s *Store) TTL(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := algorithms.CheckKind(alg); err != nil {
		return 0, err
	}
	id := idOf(alg)
	sh := s.shard(key)
	sh.mu.Lock()
	e, ok := sh.entries(id, false)[key]
	sh.mu.Unlock()
	if !ok {
		return 0, nil
	}
	return max(0, time.Duration(e.expires-now.UnixNano())), nil
}

// Len returns the number of entries held, including expired ones that the
// sweep has not dropped yet. It is meant for tests and metrics.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.len()
		sh.mu.Unlock()
	}
	return n
}
