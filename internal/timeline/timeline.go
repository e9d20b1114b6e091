// Package timeline lets a layer above a store (package lease) learn
// whether the store decides at the now its caller passes or on a clock of
// its own, without the store importing the layer or exporting a method
// users would see: a store package registers a finder from its init, as
// with internal/checked.
package timeline

import (
	"sync"

	"github.com/ratewise/ratewise/store"
)

// Mode is the clock a store decides on.
type Mode int

const (
	// Unknown: no registered finder knows the store, such as a type that
	// wraps one of this module's stores.
	Unknown Mode = iota
	// CallerTime: the store decides at the now it is given (the memory
	// store; the Redis and PostgreSQL stores WithClientTime).
	CallerTime
	// OwnClock: the store decides on its own clock and ignores the now
	// it is given (the Redis and PostgreSQL stores by default).
	OwnClock
)

var (
	mu    sync.RWMutex
	finds []func(store.Store) Mode
)

// Register adds find, which returns the Mode of a store of its package, or
// Unknown for any other store. A store package calls it once, from init.
func Register(find func(store.Store) Mode) {
	mu.Lock()
	defer mu.Unlock()
	finds = append(finds, find)
}

// Of returns s's Mode, or Unknown when no finder knows s.
func Of(s store.Store) Mode {
	mu.RLock()
	defer mu.RUnlock()
	for _, find := range finds {
		if m := find(s); m != Unknown {
			return m
		}
	}
	return Unknown
}
