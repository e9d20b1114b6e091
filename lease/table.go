package lease

import (
	"context"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	core "github.com/ratewise/ratewise/internal/lease"
	"github.com/ratewise/ratewise/store"
)

// entryKey names one state of the inner store: a key, an algorithm kind
// and its scope (store.Store's contract). One instance holds at most one
// lease per state, which the shift (Policy.Instances) counts on.
type entryKey struct {
	key   store.Key
	kind  *algorithms.Kind
	scope algo.Scope
}

// entry is this instance's lease on one state, and its rate estimate.
type entry struct {
	mu    sync.Mutex
	sizer *core.Sizer
	dead  bool // dropped from the table: callers look the key up again

	lease *core.Lease          // nil when none is live
	alg   algorithms.Algorithm // the lease's algorithm value
	id    string               // the lease's request ID
	key   store.Key

	booking chan struct{} // closed when the booking in flight returns; nil when none is

	// ahead is how far the key's state was ahead of aheadAt at the latest
	// reply: its ResetAfter. Others' bookings since only lengthen it.
	ahead   time.Duration
	aheadAt time.Time

	noBookUntil int64     // µs: a booking was denied or failed; decide directly until then
	used        int64     // µs: the latest decision's now
	latest      time.Time // the latest now a decision on the key was given here

	shiftAlg algorithms.Algorithm // the algorithm shift was computed for
	shift    time.Duration
}

// end ends e's lease at now, if any, and returns what to give back.
// Requires e.mu held.
func (e *entry) end(now time.Time) giveBack {
	if e.lease == nil {
		return giveBack{}
	}
	n, at := e.lease.End(now)
	b := giveBack{key: e.key, alg: e.alg, id: e.id, now: now, at: at, n: n}
	e.lease = nil
	return b
}

// returnDue reports whether e's lease should end now so that what it gives
// back still counts: a fixed window's a round trip before its window ends.
// Requires e.mu held.
func (e *entry) returnDue(now time.Time, roundTrip time.Duration) bool {
	return algo.FamilyOf(e.alg.Kind()) == algo.FamilyFixedWindow && !now.Add(roundTrip).Before(e.lease.ReturnBy())
}

// shiftFor returns the Config.Shift of a lease under alg. Requires e.mu
// held.
func (e *entry) shiftFor(alg algorithms.Algorithm, p Policy) time.Duration {
	if e.shiftAlg != alg {
		e.shiftAlg = alg
		e.shift = core.ShiftFor(alg, p.Instances-1, algo.MaxCost(alg)/p.Divisor)
	}
	return e.shift
}

// entryFor returns k's entry, making it if there is none.
func (s *Store) entryFor(k entryKey) *entry {
	s.mu.RLock()
	e := s.entries[k]
	s.mu.RUnlock()
	if e != nil {
		return e
	}
	sz, _ := core.NewSizer(s.sizing) // Wrap made one with it
	var backs []giveBack
	s.mu.Lock()
	if e = s.entries[k]; e == nil {
		if len(s.entries) >= s.p.MaxKeys {
			backs = s.evictLocked(s.p.Clock.Now(), true)
		}
		e = &entry{sizer: sz}
		s.entries[k] = e
	}
	s.mu.Unlock()
	_ = s.giveBack(context.Background(), backs)
	return e
}

// drop removes k's entry and ends its lease, and returns what the lease
// gives back and whether that is any unit.
func (s *Store) drop(k entryKey) (back giveBack, held bool) {
	s.mu.Lock()
	if e := s.entries[k]; e != nil {
		e.mu.Lock()
		back = e.end(s.p.Clock.Now())
		e.dead = true
		e.mu.Unlock()
		delete(s.entries, k)
	}
	s.mu.Unlock()
	return back, back.n > 0
}

// sweepIfDue ends leases gone idle, at most once a round trip on the
// Policy's clock, and gives back what they held in the caller's goroutine.
func (s *Store) sweepIfDue(ctx context.Context, now time.Time) {
	t := now.UnixMicro()
	next := s.nextSweep.Load()
	if t < next || !s.nextSweep.CompareAndSwap(next, t+s.p.RoundTrip.Microseconds()) {
		return
	}
	s.mu.Lock()
	backs := s.evictLocked(now, false)
	s.mu.Unlock()
	_ = s.giveBack(ctx, backs)
}

// idleTrips is how many round trips without a decision end a lease, and
// idleDrop how many drop a key's entry and rate estimate.
const (
	idleTrips = 2
	idleDrop  = 1000
)

// evictLocked ends every lease idle for idleTrips round trips, or due to
// be given back, and drops entries idle for idleDrop round trips; when
// full, it also drops entries until the table is three quarters full.
// Entries with a booking in flight stay. It returns what to give back.
// Requires s.mu held.
func (s *Store) evictLocked(now time.Time, full bool) []giveBack {
	var backs []giveBack
	t, rt := now.UnixMicro(), s.p.RoundTrip.Microseconds()
	target := s.p.MaxKeys * 3 / 4
	for k, e := range s.entries {
		e.mu.Lock()
		if e.booking == nil {
			idle := t - e.used
			if e.lease != nil && (idle >= idleTrips*rt || e.lease.Done(now) || e.returnDue(now, s.p.RoundTrip)) {
				backs = append(backs, e.end(now))
			}
			if idle >= idleDrop*rt || full && len(s.entries) > target && e.lease == nil {
				e.dead = true
				delete(s.entries, k)
			}
		}
		e.mu.Unlock()
	}
	if full && len(s.entries) > target {
		for k, e := range s.entries {
			if len(s.entries) <= target {
				break
			}
			e.mu.Lock()
			if e.booking == nil {
				backs = append(backs, e.end(now))
				e.dead = true
				delete(s.entries, k)
			}
			e.mu.Unlock()
		}
	}
	return backs
}
