package ratewiseotel

import (
	"sync"
	"sync/atomic"
)

// maxCached bounds a cache: past it, values are built on every event and
// not kept. Attribute sets are few (see the package documentation), so
// only a misconfiguration, such as WithLimitAttribute with a limit per
// customer, reaches it.
const maxCached = 4096

// cache maps the few keys an observer meets to values built once. A read,
// one per observed event, is a lookup in an immutable map, without a lock
// or an allocation; a new key copies the map, which happens once for each
// combination of labels a process sees, at most maxCached times. (A sync.Map would box each struct key into an
// interface: an allocation per read.)
type cache[K comparable, V any] struct {
	m  atomic.Pointer[map[K]*V]
	mu sync.Mutex // serialises writers
}

// load returns k's value, if c holds one.
func (c *cache[K, V]) load(k K) (*V, bool) {
	m := c.m.Load()
	if m == nil {
		return nil, false
	}
	v, ok := (*m)[k]
	return v, ok
}

// store keeps v as k's value and returns it, or returns the value another
// goroutine kept first.
func (c *cache[K, V]) store(k K, v *V) *V {
	if c.len() >= maxCached {
		return v // full: no lock for callers that will not be kept
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[K]*V
	if m := c.m.Load(); m != nil {
		old = *m
	}
	if kept, ok := old[k]; ok {
		return kept
	}
	if len(old) >= maxCached {
		return v
	}
	next := make(map[K]*V, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[k] = v
	c.m.Store(&next)
	return v
}

// len returns how many keys c holds.
func (c *cache[K, V]) len() int {
	if m := c.m.Load(); m != nil {
		return len(*m)
	}
	return 0
}
