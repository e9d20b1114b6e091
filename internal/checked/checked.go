// Package checked lets the root package hand a store a decision it has
// already checked, so that the store does not check it again, and lets a
// store on the system clock read that clock once for both the decision's
// time and its own bookkeeping. A store registers itself (Register) rather
// than export a method users would see.
package checked

import (
	"context"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Decider decides requests whose input its caller has checked: alg passed
// internal/algo.CheckKind and its Validate, cost is in [-MaxCost(alg),
// MaxCost(alg)], key.Name is not empty, and now is within [the Unix epoch,
// time.UnixMicro(algorithms.MaxUnixMicro)], or is the zero Time, which asks the store to decide
// at time.Now(), read once by the store itself. It decides exactly as the
// store's Decide does with the same input.
type Decider interface {
	DecideChecked(ctx context.Context, key store.Key, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error)
}

var (
	mu    sync.RWMutex
	finds []func(store.Store) Decider
)

// Register adds find, which returns the Decider of a store of its package,
// or nil for any other store. A store package calls it once, from init.
func Register(find func(store.Store) Decider) {
	mu.Lock()
	defer mu.Unlock()
	finds = append(finds, find)
}

// For returns s's Decider, or nil when s has none.
func For(s store.Store) Decider {
	mu.RLock()
	defer mu.RUnlock()
	for _, find := range finds {
		if d := find(s); d != nil {
			return d
		}
	}
	return nil
}
