package storememory

import (
	"math/rand/v2"
	"time"
)

// minShrink is the fewest entries a table must have held at a sweep for a
// later sweep to give it an index and chunk lists of its present size.
const minShrink = 1024

// tick counts a decision and reports whether the shard is due a sweep: once
// it has seen as many decisions as it kept entries after its last sweep. A
// sweep then visits at most twice that many entries, so it costs O(1)
// amortised per decision, and a shard holds at most its live entries plus
// the decisions since the last sweep. The threshold is fixed at sweep time:
// under churn the tables grow with every decision, so comparing against
// their current size would never fire. A quiet decision, one that changed
// nothing and found nothing expired, makes a sweep due only after
// minQuietSweepOps, so that a hot key's callers seldom meet the write lock,
// and a hot key's denials without a lock are not counted at all, so that
// they write nothing shared: none of them adds an entry or finds one
// expired.
func (sh *shard) tick(quiet bool) bool {
	d := int64(1)
	if quiet {
		// Counted a quietSample-th of the time, quietSample at once, so
		// that a hot key's callers seldom write the count.
		if rand.Uint32()%quietSample != 0 {
			return false
		}
		d = quietSample
	}
	n := sh.opsSinceSweep.Add(d)
	if quiet {
		return n >= max(sh.sweepAfter.Load(), minQuietSweepOps)
	}
	return n >= sh.sweepAfter.Load()
}

// sweepIfDue counts a decision of shard sh made under the read lock or
// none, and sweeps if that makes a sweep due and the write lock is free: if
// not, a later decision will. Requires sh.mu not held.
func (s *Store) sweepIfDue(sh *shard, quiet bool) {
	if sh.tick(quiet) && sh.mu.TryLock() {
		// The hot entry stays: a sweep drops only entries that stopped
		// counting, whose copies then count no more either.
		sh.excludeReaders()
		sh.sweep(s.elapsed())
		sh.unlock()
	}
}

// sweep drops the entries that may go at el on the store's clock (see
// sweepAt), if a sweep is still due. It goes by the store's clock, never a
// caller's: a reading far ahead, from a clock stepped forward or a limiter
// with a clock of its own, would otherwise drop other keys' live state.
// Requires the write lock: mu held to write, and readers excluded.
func (sh *shard) sweep(el time.Duration) {
	if sh.opsSinceSweep.Load() < sh.sweepAfter.Load() {
		return // another decision swept since its tick
	}
	for _, t := range sh.tables {
		t.sweep(uint32(max(el, 0) / time.Second))
	}
	sh.marks.sweep(el)
	sh.opsSinceSweep.Store(0)
	sh.sweepAfter.Store(int64(max(sh.len(), minSweepOps)))
}
