package storememory

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// shard is 384 bytes, six cache lines: one that every decision reads and
// few write, one that writers write, and one per reader slot, so that a hot
// key's denials, which take no lock and write nothing (see hot), find the
// first in their core's cache, and readers on two cores mostly write lines
// of their own (see TestShardLayout).
type shard struct {
	// hot is a copy of the packed state of a key the shard keeps denying,
	// so that its denials take no lock at all. Every write lock forgets it
	// (see lock).
	hot atomic.Pointer[hotEntry]
	// tables require the read lock (rlock, or mu to read) to read, and
	// the write lock (lock) to write.
	tables []*table
	// sweepAfter requires mu held to write.
	sweepAfter atomic.Int64
	// denying is whether the last request of cost 1 decided under the write
	// lock was denied: the next is then first inspected under the read lock
	// (see decide).
	denying atomic.Bool
	// writing is set while a writer holds mu (see rlock).
	writing atomic.Bool
	_       [16]byte

	// mu is held to write for decisions that may change state, and to read
	// by readers that find a writer (see rlock).
	mu sync.RWMutex
	// opsSinceSweep counts decisions (see tick).
	opsSinceSweep atomic.Int64
	// lastDenied is the hash of the last key denied under the read lock: a
	// key denied twice in a row there becomes hot.
	lastDenied atomic.Uint64
	// once holds the admissions made with a request ID (see once.go). It
	// requires the write lock.
	once onceTable
	// marks holds the copies of states that leases left (see lease.go),
	// nil until the shard's first lease. It requires the write lock.
	marks *markTable

	// readers count the readers that hold the read lock without mu, one
	// cache line each (see rlock).
	readers [readerSlots]struct {
		n atomic.Int32
		_ [60]byte
	}
}

// readerSlots is how many counters a shard's readers spread over: a
// hot key's callers on different cores mostly count on different cache
// lines, where one reader count, as in sync.RWMutex, would pass between
// the cores on every decision.
const readerSlots = 4

// rlock takes the read lock: it counts the reader in a slot chosen at
// random, and if a writer holds mu, takes mu to read instead. It returns
// what runlock needs. The slot is counted before writing is read, and
// writing set before a writer reads the slots (lock), so that either the
// reader sees the writer or the writer waits for the reader.
func (sh *shard) rlock() int {
	i := int(rand.Uint32() % readerSlots)
	sh.readers[i].n.Add(1)
	if !sh.writing.Load() {
		return i
	}
	sh.readers[i].n.Add(-1)
	sh.mu.RLock()
	return -1
}

// runlock releases what rlock took.
func (sh *shard) runlock(i int) {
	if i < 0 {
		sh.mu.RUnlock()
		return
	}
	sh.readers[i].n.Add(-1)
}

// excludeReaders marks mu held to write and waits for the readers that
// hold the read lock without it. Requires sh.mu held to write.
func (sh *shard) excludeReaders() {
	sh.writing.Store(true)
	for i := range sh.readers {
		for sh.readers[i].n.Load() != 0 {
			runtime.Gosched() // a reader holds it for one inspection
		}
	}
}

// unlock releases the write lock.
func (sh *shard) unlock() {
	sh.writing.Store(false)
	sh.mu.Unlock()
}

// hotEntry is a packed entry as it stood when published; it never changes.
type hotEntry struct {
	t   *table
	key string
	w   algo.Words
	tag int64
}

// denies decides a request of cost 1 for the hot entry's key at now as an
// inspection, into res, and reports whether it was denied with the state
// kept as it is: the Result of that request (see decideRequest).
func (hot *hotEntry) denies(alg algorithms.Algorithm, now time.Time, res *algorithms.Result) bool {
	var keeps bool
	*res, keeps = algo.Inspect(alg, hot.w, hot.tag, now, -1)
	return !res.Allowed && keeps
}

// lock takes the write lock, and forgets the hot entry, which the writer
// may change: a decision that took no lock after this must see the write.
func (sh *shard) lock() {
	sh.mu.Lock()
	sh.excludeReaders()
	if sh.hot.Load() != nil {
		sh.hot.Store(nil)
	}
}
