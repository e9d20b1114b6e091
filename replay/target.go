package replay

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// A Target is a kind of store that compare runs on. Every run opens a
// fresh, empty instance, so one run's state never leaks into another's.
type Target interface {
	// Name names the target in reports: "memory", "miniredis", "redis",
	// "cluster" or "postgres".
	Name() string
	// Open returns a fresh store. It is called once per run.
	Open(ctx context.Context) (Instance, error)
	// Parallel reports whether runs on separate instances may proceed at
	// once without disturbing each other's measurements.
	Parallel() bool
	// Close releases what the target holds.
	Close()
}

// KeyParallel is implemented by a Target on which one run may decide the
// requests of different keys at once: a store reached over the network,
// where a replay that waits for each round trip in turn leaves the server
// idle. A run partitions the keys among ReplayGoroutines goroutines, each
// deciding its keys' requests in the trace's order; since a store decides
// on the time it is given and keys share no state, the decisions are those
// of a replay in order. A Target that does not implement it replays on one
// goroutine, as the memory store must: its expiry sweeps, run at the time
// of whichever decision makes one due, are shared by many keys, so a key
// replayed ahead of the others could sweep away state another still
// counts.
type KeyParallel interface {
	// ReplayGoroutines is how many goroutines a run decides on.
	ReplayGoroutines() int
}

// An Instance is one run's store and what it can measure about itself.
type Instance interface {
	Store() store.Store
	// Ops returns the round trips and store commands so far. Commands is -1
	// when the store has no commands to count.
	Ops(ctx context.Context) (Ops, error)
	// BytesPerKey measures the memory the store holds per key after a run
	// of alg on w, whose active keys are keys, busiest first. measured is
	// how many keys the figure is the average of; 0 when the store cannot
	// tell, and then perKey is 0 too.
	BytesPerKey(
		ctx context.Context,
		w *workload.Workload,
		keys []string,
		alg algorithms.Algorithm,
	) (perKey float64, measured int, err error)
	Close()
}

// Ops counts what decisions cost a store.
type Ops struct {
	RoundTrips int64
	Commands   int64
}

// Memory is the in-memory store target. Its runs must not overlap: memory
// per key is the growth of the Go heap.
type Memory struct{}

// Name returns "memory".
func (Memory) Name() string { return "memory" }

// Parallel returns false: heap growth is measured for the whole process.
func (Memory) Parallel() bool { return false }

// Close does nothing.
func (Memory) Close() {}

// Open returns a fresh store.
func (Memory) Open(context.Context) (Instance, error) {
	return &memoryInstance{s: storememory.New()}, nil
}

type memoryInstance struct{ s *storememory.Store }

func (m *memoryInstance) Store() store.Store { return m.s }

func (m *memoryInstance) Ops(context.Context) (Ops, error) { return Ops{Commands: -1}, nil }

func (m *memoryInstance) Close() {}

// FixedStateKeys is how many keys the memory target measures an algorithm
// of fixed-size state over (see Memory's BytesPerKey): enough that the
// store's tables, whose sizes grow in steps, are about as full at every
// measurement, so one algorithm gets one figure on every workload and run.
const FixedStateKeys = 1 << 16

// Measuring a log's few keys' few hundred bytes would drown in the heap's
// noise, so BytesPerKey replays the workload on enough copies of its keys
// to hold at least minMeasuredKeys, within a budget of decisions.
const (
	minMeasuredKeys  = 2560 // ten per shard
	maxMeasureReplay = 300_000
)

// BytesPerKey returns the growth of the live heap, per key, of a fresh
// store holding keys of alg's state.
//
// An algorithm whose state does not grow with requests (every family but
// algo.FamilyLog) holds the same state for a key whatever the
// workload, so it is measured the same way every time: FixedStateKeys keys
// of 12-byte names, each after one decision. A log's state depends on the
// traffic, so w is replayed on copies of its keys and the growth divided
// by the entries the store holds at the end.
func (m *memoryInstance) BytesPerKey(
	ctx context.Context,
	w *workload.Workload,
	_ []string,
	alg algorithms.Algorithm,
) (float64, int, error) {
	if algo.FamilyOf(alg.Kind()) != algo.FamilyLog {
		return fixedStateBytes(ctx, alg, w.Start)
	}
	if len(w.Requests) == 0 {
		return 0, 0, nil // no key holds state
	}
	copies := 1
	if active := w.ActiveKeys(); active < minMeasuredKeys {
		copies = (minMeasuredKeys + active - 1) / active
		copies = max(1, min(copies, maxMeasureReplay/len(w.Requests)))
	}
	base := heapAfterGC()
	// The store's clock follows the replayed time, so that keys go as they
	// would in real time, as the memory a key holds depends on.
	clock := &followClock{t: w.Start}
	s := storememory.New(storememory.WithClock(clock))
	empty := heapAfterGC() - base
	names := make([][]string, copies)
	for c := range names {
		names[c] = make([]string, len(w.Keys))
		for k, key := range w.Keys {
			names[c][k] = fmt.Sprintf("%d:%s", c, key)
		}
	}
	for c := range copies {
		// Each copy replays the same times on keys of its own, so that
		// every copy's keys are held at once: the clock goes back to the
		// start, which only delays sweeps of the copies before until it
		// passes their times again.
		clock.t = w.Start
		for _, r := range w.Requests {
			now := w.Start.Add(r.At)
			clock.t = maxTime(clock.t, now)
			if _, err := s.Decide(ctx, store.Key{Name: names[c][r.Key]}, alg, now, r.Cost); err != nil {
				return 0, 0, err
			}
		}
	}
	// The store keeps the key strings it holds alive; the lists of them
	// go, so that only what the store holds is counted, less the fixed
	// size of an empty store.
	names = nil
	return perEntry(s, base, empty)
}

// followClock is a store's clock that follows a replay's time (see
// storememory.WithClock). It is not safe for concurrent use.
type followClock struct{ t time.Time }

func (c *followClock) Now() time.Time { return c.t }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// perEntry is the heap growth since base per entry s holds, less the size
// empty of an empty store, and how many entries it holds; 0 when it holds
// none or the heap did not grow.
func perEntry(s *storememory.Store, base, empty uint64) (float64, int, error) {
	grown := int64(heapAfterGC()) - int64(base) - int64(empty)
	n := s.Len()
	runtime.KeepAlive(s)
	if n == 0 || grown <= 0 {
		return 0, 0, nil
	}
	return float64(grown) / float64(n), n, nil
}

// fixedStateBytes is the heap growth per key of a fresh store after one
// decision of alg, at now, on each of FixedStateKeys keys, less the size of
// the empty store. The names have one width, so each costs the same.
func fixedStateBytes(ctx context.Context, alg algorithms.Algorithm, now time.Time) (float64, int, error) {
	// One fixed-size state gives one figure: measure each configuration
	// once per process.
	id := alg.Kind().String() + " " + algo.ParamsString(alg)
	if f, ok := fixedStateCache.Load(id); ok {
		f := f.(fixedFigure)
		return f.perKey, f.keys, nil
	}
	perKey, keys, err := measureFixedState(ctx, alg, now)
	if err == nil && keys > 0 {
		fixedStateCache.Store(id, fixedFigure{perKey, keys})
	}
	return perKey, keys, err
}

// fixedStateCache holds fixedStateBytes's figures by algorithm and
// parameters.
var fixedStateCache sync.Map

type fixedFigure struct {
	perKey float64
	keys   int
}

func measureFixedState(ctx context.Context, alg algorithms.Algorithm, now time.Time) (float64, int, error) {
	base := heapAfterGC()
	s := storememory.New()
	empty := heapAfterGC() - base
	for i := range FixedStateKeys {
		if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprintf("k%011d", i)}, alg, now, 1); err != nil {
			return 0, 0, err
		}
	}
	return perEntry(s, base, empty)
}

func heapAfterGC() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
