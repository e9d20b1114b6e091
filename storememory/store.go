// Package storememory is the in-memory ratewise store, for unit tests and
// single processes.
//
// It keeps each key's state in one of 256 shards, each holding one table per
// algorithm and scope behind its own read-write
// lock, so unrelated keys rarely contend and there is no global lock. A
// table is an open-addressing hash index over dense entries: a decision
// finds its key once and updates the entry in place. The states of the
// algorithms that pack (the fixed window, token bucket
// and GCRA) live inline in the entry, so that deciding allocates nothing and
// an idle key costs about 44 bytes besides the key itself. Keys are hashed
// and compared in the two parts a store.Key carries, its namespace and
// name, so nothing is joined per decision either. A key longer than 2,048
// bytes is kept under a digest of 32 bytes, keyed by a secret of the
// store's, so that what a key costs is bounded and no caller can choose a
// key that spells another's digest.
// Inspections, and the denials that a key over its limit mostly gets, change
// nothing, so they take the read lock, or, on a packed state the shard keeps
// denying, no lock at all: a hot key's callers do not queue. Publishing such
// a key's copy is the one allocation a decision may make, once after each
// write to its shard.
//
// Every decision is made at the now its caller passes, so a limiter with an
// injected clock drives it completely and tests never sleep. State stops
// counting Result.ResetAfter after the decision that wrote it, the moment it
// can no longer affect a decision. An incremental sweep, O(1) amortised per
// decision and with no background goroutine, drops entries that have
// stopped counting a second later on the store's own clock: the process's
// monotonic clock, or one given with WithClock. No caller's reading decides
// what a sweep drops, so a clock far ahead (stepped forward, a VM resumed,
// a limiter with a clock of its own) never drops another key's live state,
// and memory stays bounded under key churn.
package storememory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"hash/maphash"
	"math"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/longkey"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

var _ store.Store = (*Store)(nil)

const (
	shardCount = 256
	// minSweepOps keeps tiny shards from being swept on every decision.
	minSweepOps = 64
	// minQuietSweepOps is the fewest decisions that changed nothing and
	// found nothing expired after which a shard sweeps: a sweep takes the
	// write lock, which a hot key's callers, deciding under the read lock or
	// none, should seldom meet.
	minQuietSweepOps = 1024
	quietSample      = 16
)

// Store is the in-memory store. Its zero value is not usable; call New. It is
// safe for concurrent use.
type Store struct {
	shards [shardCount]shard // first, so that shards start on a cache line
	seed   maphash.Seed
	// clock is the store's own clock (WithClock), nil for the process's
	// monotonic clock, and base its reading when the store was made: what
	// sweeps and request-ID records go by (see elapsed).
	clock interface{ Now() time.Time }
	base  time.Time
	// secret keys the digests of long keys (see kept).
	secret [32]byte
	// valid is the algorithm the store last found valid (algo.CheckKind
	// and Validate), so that a limiter's calls, which repeat one
	// algorithm, check only their cost and time (see check).
	valid atomic.Pointer[checked]
}

// tableID tells apart state that must never mix: the algorithm and its
// scope. A store rarely serves more than a few, so a shard finds a table by
// a linear scan, and an entry holds the bare key: 16 bytes less per entry
// than keying by (algorithm, key).
type tableID struct {
	kind  *algorithms.Kind
	scope algo.Scope
}

func idOf(alg algorithms.Algorithm) tableID {
	return tableID{kind: alg.Kind(), scope: algo.ScopeOf(alg)}
}

// New returns an empty store.
func New(opts ...Option) *Store {
	s := &Store{seed: maphash.MakeSeed()}
	_, _ = rand.Read(s.secret[:]) // crypto/rand never fails on the platforms Go supports
	for _, o := range opts {
		o.apply(s)
	}
	if s.clock != nil {
		s.base = s.clock.Now()
	} else {
		s.base = time.Now()
	}
	for i := range s.shards {
		s.shards[i].sweepAfter.Store(minSweepOps)
	}
	return s
}

// Option configures a Store.
type Option interface {
	apply(*Store)
}

type optionFunc func(*Store)

func (f optionFunc) apply(s *Store) { f(s) }

// WithClock makes the store's own clock c instead of the process's
// monotonic clock. The store's clock decides nothing: every decision uses
// the now its caller passes. It decides when a key that has stopped
// counting may be dropped from memory, and how long a request ID is
// remembered, so that no caller's clock reading, however far ahead, drops
// another key's state. A simulation that runs far faster than real time,
// replaying hours in seconds, passes its clock so that keys go as they
// would in real time and memory stays bounded; c must then never fall
// behind the times its decisions are made at by more than their states'
// lifetimes. A nil c keeps the monotonic clock.
func WithClock(c interface{ Now() time.Time }) Option {
	return optionFunc(func(s *Store) { s.clock = c })
}

// elapsed is the time since the store was made on its own clock: the
// process's monotonic clock, never a caller's reading, or WithClock's.
func (s *Store) elapsed() time.Duration {
	if s.clock != nil {
		return max(s.clock.Now().Sub(s.base), 0)
	}
	return time.Since(s.base)
}

// sweepAt is the second on the store's clock from which a sweep may drop
// an entry written at el (see elapsed) whose state counts for life:
// el + life + storecheck.ExpiryGrace, rounded up, at most the largest second an entry
// holds.
func sweepAt(el, life time.Duration) uint32 {
	at := (el + max(life, 0) + storecheck.ExpiryGrace + time.Second - 1) / time.Second
	return uint32(min(at, math.MaxUint32))
}

// systemNow reads the system clock for a decision made at the zero now,
// as every other call of the store does (storecheck.Now), and the time
// since the store was made on its own clock, el, or -1 when the store has
// a clock of its own (WithClock), which elapsed then reads. A clock of
// the store's own making (its wall time at New advanced by the monotonic
// clock) would be cheaper to read, but would drift from time.Now after a
// wall-clock step or a suspend, and a refund or a booking made at
// time.Now would then meet states written at the other clock.
func (s *Store) systemNow() (now time.Time, el time.Duration) {
	now = time.Now()
	if s.clock != nil {
		return now, -1
	}
	return now, max(now.Sub(s.base), 0)
}

// elapsedOr returns el, or elapsed if el is -1.
func (s *Store) elapsedOr(el time.Duration) time.Duration {
	if el < 0 {
		return s.elapsed()
	}
	return el
}

// kept returns the key as the store keeps it: k itself, or for a key
// longer than longkey.Threshold a name of 32 bytes, the SHA-256 digest of
// the store's secret and the key, so that a long key costs what a short
// one does. The secret, drawn when the store is made, is what keeps a
// digest from being any other key's spelling: a caller who cannot know it
// cannot choose a short key that is the digest of a long one.
func (s *Store) kept(k store.Key) store.Key {
	if !longkey.Over(k.Namespace, k.Name) {
		return k
	}
	h := sha256.New()
	h.Write(s.secret[:])
	h.Write([]byte(k.Namespace))
	if k.Namespace != "" {
		h.Write([]byte{':'})
	}
	h.Write([]byte(k.Name))
	return store.Key{Name: string(h.Sum(nil))}
}

// hash returns the hash of the key ns:key (store.Key.String), without
// joining them.
func (s *Store) hash(ns, key string) uint64 {
	if ns == "" {
		return maphash.String(s.seed, key)
	}
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(ns)
	h.WriteByte(':')
	h.WriteString(key)
	return h.Sum64()
}

// shard returns the shard of the key whose hash is h; the table index uses
// the hash's higher bits.
func (s *Store) shard(h uint64) *shard { return &s.shards[h%shardCount] }

// table returns the table for alg's kind and scope, creating it if create
// is set; nil if absent. Requires a read lock, or the write lock (lock) if
// create is set.
func (sh *shard) table(alg algorithms.Algorithm, seed maphash.Seed, create bool) *table {
	return sh.tableOf(idOf(alg), alg, seed, create)
}

// tableOf is table for alg, whose kind and scope are id.
func (sh *shard) tableOf(id tableID, alg algorithms.Algorithm, seed maphash.Seed, create bool) *table {
	for _, t := range sh.tables {
		if t.id == id {
			return t
		}
	}
	if !create {
		return nil
	}
	t := newTable(id, alg, seed)
	sh.tables = append(sh.tables, t)
	return t
}

// len returns the entries in all tables. Requires a read lock.
func (sh *shard) len() int {
	n := 0
	for _, t := range sh.tables {
		n += t.n
	}
	return n
}

// cursor is a key's place in a table: what find returned, and where keep
// writes. A nil table holds nothing.
type cursor struct {
	t         *table
	alg       algorithms.Algorithm // the algorithm deciding
	h         uint64
	ns, key   string
	slot, pos int
}

// find looks ns:key up in alg's table, creating the table if create is
// set. Requires a read lock, or the write lock if create is set.
func (sh *shard) find(h uint64, ns, key string, alg algorithms.Algorithm, seed maphash.Seed, create bool) cursor {
	return sh.findIn(sh.table(alg, seed, create), h, ns, key, alg)
}

// findIn looks ns:key up in t, alg's table, if not nil.
func (sh *shard) findIn(t *table, h uint64, ns, key string, alg algorithms.Algorithm) cursor {
	c := cursor{t: t, alg: alg, h: h, ns: ns, key: key, pos: -1}
	if t != nil {
		c.slot, c.pos = t.find(h, ns, key)
	}
	return c
}

// state returns the key's state if it still counts at now (Unix
// nanoseconds), or nil.
func (c *cursor) state(now int64) algo.State {
	if c.t == nil {
		return nil
	}
	return c.t.state(c.pos, now)
}

// keep records the state a decision of cost at now left (see table.keep).
// changed is whether an inspection or a denial of cost 1 changed the state
// anyway (algo.Keeps: a bucket converted from another rate count),
// which it then writes as an admission would. The cursor's table must exist
// when cost > 0 or changed.
func (c *cursor) keep(state algo.State, res algorithms.Result, now int64, el time.Duration, cost int64, changed bool) {
	switch {
	case c.t == nil || cost <= 0 && !changed:
		// An inspection changes nothing: not even an expired entry goes,
		// since a request whose clock reading is behind may still need it.
		return
	case cost == 1 && !res.Allowed && c.pos >= 0 && !changed:
		// A denial of cost 1 is not remembered (algo.Decide),
		// so the key's state counts as long as it did, as on Redis, where
		// the script writes nothing. A log's step may have dropped expired
		// records: its state is replaced, its expiry kept.
		c.t.replace(c.pos, state)
		return
	}
	c.t.keep(c, state, res, now, el)
}

// decide decides r on the cursor's state as algo.Decide does, and keeps
// what it leaves: the step of a state that is not packed.
func (c *cursor) decide(r *request, res *algorithms.Result) {
	st := c.state(r.t)
	changed := changes(r.alg, st, r.now, r.cost)
	var state algo.State
	state, *res = algo.Decide(r.alg, st, r.now, r.cost)
	c.keep(state, *res, r.t, r.el, r.cost, changed)
}

// changes reports whether Decide(state, now, cost) of alg may change state
// although cost is an inspection or a request of cost 1 that it denies
// (algo.Keeps); it is not asked of other costs.
func changes(alg algorithms.Algorithm, state algo.State, now time.Time, cost int64) bool {
	if cost > 1 {
		return false
	}
	return !algo.Keeps(alg, state, now, cost)
}

// Decide runs alg's decision step on key's state under the key's shard lock.
// It runs every registered algorithm, so it never returns
// store.ErrUnsupported; an invalid algorithm, cost or time wraps the
// algorithms package's errors, as on every store.
//
// With the zero now, it reads the system clock once (systemNow), for the
// decision and, unless the store has a clock of its own (WithClock), for
// its own bookkeeping (elapsed).
func (s *Store) Decide(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (res algorithms.Result, err error) {
	if err := ctx.Err(); err != nil {
		return res, err
	}
	el := time.Duration(-1)
	if now.IsZero() {
		now, el = s.systemNow()
	}
	c, err := s.check(alg, now, cost)
	if err != nil {
		return res, err
	}
	err = s.decideRequest(ctx, s.kept(key), c, now, el, cost, &res)
	return res, err
}

// request is one decision's input on its way down to a shard and a table:
// the key (ns:key, and its hash h), the algorithm, the time (now, and t in
// Unix nanoseconds), the time on the store's clock (el, elapsed; -1 until
// it is read) and the cost.
type request struct {
	h       uint64
	ns, key string
	alg     algorithms.Algorithm
	checked *checked
	now     time.Time
	t       int64
	el      time.Duration
	cost    int64
}

// checked is an algorithm the store found valid, with what its decisions
// derive from it: its table's ID, and what its packed step derives
// (algo.Derive), if it packs.
type checked struct {
	alg     algorithms.Algorithm
	id      tableID
	derived algo.Derived
}

// check is algo.CheckDecision, which validates alg only when it is not the
// algorithm the store last found valid: one of package algorithms' types
// (CheckKind), whose values compare, and equal to it. It returns that
// algorithm's checked record.
func (s *Store) check(alg algorithms.Algorithm, now time.Time, cost int64) (*checked, error) {
	if err := algo.CheckKind(alg); err != nil {
		return nil, err
	}
	c := s.valid.Load()
	if c == nil || c.alg != alg {
		if err := alg.Validate(); err != nil {
			return nil, err
		}
		c = &checked{alg: alg, id: idOf(alg)}
		if algo.Packs(alg) {
			c.derived = algo.Derive(alg)
		}
		s.valid.Store(c)
	}
	if err := algo.CheckCost(alg, cost); err != nil {
		return nil, err
	}
	return c, algo.CheckTime(now)
}

// Capabilities reports that the store decides at the now it is given and
// applies request IDs once.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{RequestIDs: true}
}

// decideRequest decides checked input; el is the time on the store's
// clock (elapsed), or -1 for decideRequest to read it if it needs it.
func (s *Store) decideRequest(
	ctx context.Context,
	key store.Key,
	c *checked,
	now time.Time,
	el time.Duration,
	cost int64,
	res *algorithms.Result,
) error {
	id, once, err := requestID(ctx, cost)
	if err != nil {
		return err
	}
	alg := c.alg
	h := s.hash(key.Namespace, key.Name)
	sh := s.shard(h)
	// An inspection changes nothing, and neither does a denial of cost 1
	// (algo.Decide) unless a log drops expired records in it
	// (algo.Keeps); such denials are what a key over its limit
	// mostly sees. Both are decided under the read lock, or none for a
	// packed state (see hot), so a hot key's callers run in parallel. A
	// denial of cost 1 gets the Result of an inspection as a request of cost
	// 1, which is the same.
	if cost == 1 && !once {
		// A hot key's denial: the entry as it stood at the last write
		// lock, which is the state now.
		if hot := sh.hot.Load(); hot != nil && hot.t.id == c.id && matches(hot.key, key.Namespace, key.Name) &&
			hot.denies(alg, now, res) {
			return nil // not counted (see tick)
		}
	}
	r := request{
		h:       h,
		ns:      key.Namespace,
		key:     key.Name,
		alg:     alg,
		checked: c,
		now:     now,
		t:       now.UnixNano(),
		el:      el,
		cost:    cost,
	}
	if once {
		r.el = s.elapsedOr(r.el)
		s.decideWithID(sh, &r, id, res)
		return nil
	}
	if (cost <= 0 || cost == 1 && sh.denying.Load()) && s.decidedReading(sh, &r, res) {
		return nil
	}

	r.el = s.elapsedOr(r.el)
	sh.lock()
	defer sh.unlock()
	sh.decideLocked(s.seed, &r, res)
	return nil
}

// decidedReading decides r under the read lock if it can (see inspect),
// and reports whether it did.
func (s *Store) decidedReading(sh *shard, r *request, res *algorithms.Result) bool {
	rl := sh.rlock()
	var done, expired bool
	*res, done, expired = sh.inspect(r)
	sh.runlock(rl)
	if done {
		s.sweepIfDue(sh, !expired)
	}
	return done
}

// decideWithID decides a request with a request ID that charges: the first
// admission with the ID, or a decision that it records if it admits. Not
// in decideRequest, whose one deferred unlock stays open-coded.
func (s *Store) decideWithID(sh *shard, r *request, id string, res *algorithms.Result) {
	k := onceKey{t: r.checked.id, op: onceDecide, key: store.Key{Namespace: r.ns, Name: r.key}.String(), id: id}
	sh.lock()
	defer sh.unlock()
	if rec, ok := sh.once.find(k, r.el); ok {
		*res = rec.results[0]
		return
	}
	sh.decideLocked(s.seed, r, res)
	if res.Allowed {
		sh.once.keep(k, r.el, 0, *res)
	}
}

// decideLocked decides under the write lock, writing the Result into res.
func (sh *shard) decideLocked(seed maphash.Seed, r *request, res *algorithms.Result) {
	c := sh.findIn(sh.tableOf(r.checked.id, r.alg, seed, true), r.h, r.ns, r.key, r.alg)
	if packed := r.cost >= 1 && c.t.stepPacked(&c, r, res); !packed {
		c.decide(r, res)
	}
	if d := !res.Allowed; r.cost == 1 && sh.denying.Load() != d {
		sh.denying.Store(d)
	}
	if sh.tick(false) {
		sh.sweep(r.el)
	}
}

// inspect decides a cost <= 0, or a cost of 1 as an inspection of cost -1,
// on key's state at now (t in Unix nanoseconds), without changing anything.
// done is false when a request of cost 1 would be admitted, or when the
// decision would change the state all the same (algo.Keeps), which
// must be decided under the write lock; expired is whether it found an
// entry that no longer counts, for a sweep to drop. Requires the read lock
// (rlock).
func (sh *shard) inspect(r *request) (res algorithms.Result, done, expired bool) {
	h, ns, key, alg, t, now, cost := r.h, r.ns, r.key, r.alg, r.t, r.now, r.cost
	ask := min(cost, -cost)
	tb, pos := sh.tableOf(r.checked.id, alg, maphash.Seed{}, false), -1
	if tb != nil {
		_, pos = tb.find(h, ns, key)
	}
	switch {
	case pos < 0 || tb.expires(pos) <= t:
		expired = pos >= 0
		_, res = algo.Decide(alg, nil, now, ask)
	case tb.at(pos).w[0] == boxed:
		st := *tb.box(pos, false)
		if changes(alg, st, now, cost) {
			// A log's denial drops the records that expired, which a
			// request with an earlier clock reading could still count, and
			// a bucket written under another rate count is converted: a
			// write.
			return res, false, false
		}
		_, res = algo.Decide(alg, st, now, ask)
	default:
		// Not table.state, whose scratch state is for the write lock; and
		// alg's own parameters, not the table's packer's.
		e := tb.at(pos)
		var keeps bool
		if res, keeps = algo.Inspect(alg, e.w, tb.tag, now, ask); !keeps {
			return res, false, false // a rate count converted: a write
		}
		if cost == 1 && !res.Allowed {
			sh.denied(h, tb, e)
		}
	}
	return res, cost <= 0 || !res.Allowed, expired
}

// denied notes that a request of cost 1 was denied on the packed entry e,
// whose key's hash is h, and makes it hot when the last one denied was it
// too. Requires the read lock (rlock), so that no write comes in between.
func (sh *shard) denied(h uint64, tb *table, e *entry) {
	if sh.lastDenied.Load() != h {
		sh.lastDenied.Store(h)
		return
	}
	if hot := sh.hot.Load(); hot == nil || hot.t != tb || hot.key != e.key {
		sh.hot.Store(&hotEntry{t: tb, key: e.key, w: e.w, tag: tb.tag})
	}
}

// Reset forgets alg's state for key, or puts the key's mark back if a
// lease left one (store.Store.Lease).
func (s *Store) Reset(ctx context.Context, key store.Key, alg algorithms.Algorithm) error {
	key = s.kept(key)
	return s.reset(ctx, key.Namespace, key.Name, alg)
}

func (s *Store) reset(ctx context.Context, ns, key string, alg algorithms.Algorithm) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := algo.CheckKind(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	id, once, err := requestID(ctx, 1)
	if err != nil {
		return err
	}
	h := s.hash(ns, key)
	sh := s.shard(h)
	el := s.elapsed()
	sh.lock()
	defer sh.unlock()
	// A reset with an ID is applied once while its record lasts: as long
	// as the state it deleted would have been kept.
	k := onceKey{t: idOf(alg), op: onceReset, key: store.Key{Namespace: ns, Name: key}.String(), id: id}
	if once {
		if _, ok := sh.once.find(k, el); ok {
			return nil
		}
	}
	// A key a lease was booked on gets its mark back (store.Store.Lease): the
	// state the latest lease left, which its units still count in.
	m, marked := sh.marks.find(markKey{t: idOf(alg), key: k.key}, el)
	var kept time.Duration
	c := sh.find(h, ns, key, alg, s.seed, marked)
	if c.pos >= 0 {
		kept = time.Duration(*c.t.sweepAt(c.pos))*time.Second - el
	}
	switch {
	case marked:
		c.t.put(&c, m)
		kept = max(kept, time.Duration(m.sweep)*time.Second-el)
	case c.pos >= 0:
		c.t.remove(c.slot, c.pos)
	}
	if once {
		sh.once.keepFor(k, el, 0, max(kept, time.Microsecond))
	}
	return nil
}

// TTL returns how long after now the store keeps alg's state for key, or 0
// if it holds none. A state of the algorithms that pack stops counting at a
// whole microsecond, so its TTL is its ResetAfter less the nanoseconds of
// the now that wrote it.
func (s *Store) TTL(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
) (time.Duration, error) {
	sk = s.kept(sk)
	ns, key := sk.Namespace, sk.Name
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := algo.CheckKind(alg); err != nil {
		return 0, err
	}
	h := s.hash(ns, key)
	sh := s.shard(h)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	c := sh.find(h, ns, key, alg, s.seed, false)
	if c.pos < 0 {
		return 0, nil
	}
	return max(0, time.Duration(c.t.expires(c.pos)-now.UnixNano())), nil
}

// Len returns the number of entries held, including expired ones that the
// sweep has not dropped yet. It is meant for tests and metrics.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.len()
		sh.mu.RUnlock()
	}
	return n
}
