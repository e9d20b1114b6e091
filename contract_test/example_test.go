package contract_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	contract "github.com/ratewise/ratewise/contract_test"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// meteredStore is a store of a third party's: it wraps ratewise's memory
// store and counts the decisions it passes on, as a metrics layer would.
// Embedding store.Store passes every other call on, Capabilities included.
type meteredStore struct {
	store.Store
	decisions atomic.Int64
}

func (s *meteredStore) Decide(
	ctx context.Context, k store.Key, alg algorithms.Algorithm, now time.Time, cost int64,
) (algorithms.Result, error) {
	s.decisions.Add(1)
	return s.Store.Decide(ctx, k, alg, now, cost)
}

// A store's own tests run the suite with Run and a factory that returns the
// store under test, in a test function:
//
//	func TestContract(t *testing.T) {
//		contract.Run(t, func(t *testing.T) store.Store { return mystore.New(t) })
//	}
//
// Run needs the test's *testing.T, so this example only declares that test.
func Example() {
	testContract := func(t *testing.T) {
		// The memory store's own clock stands still, so that it drops no
		// key the suite's clock, which jumps, still finds counting.
		clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
		contract.Run(t, func(t *testing.T) store.Store {
			return &meteredStore{Store: storememory.New(storememory.WithClock(clock))}
		})
	}
	_ = testContract
}
