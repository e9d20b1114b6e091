package contract_test

import (
	"context"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// referenceStore is the simplest store that can be: one lock, one map, and
// state kept forever. Running the suite on it checks the algorithms alone:
// a store that drops state at ResetAfter would hide an algorithm that forgets
// to trim, since the dropped state can no longer be trimmed wrongly.
type referenceStore struct {
	mu     sync.Mutex
	states map[refKey]algorithms.State
}

type refKey struct {
	alg   string
	scope algorithms.Scope
	key   string
}

var _ store.Store = (*referenceStore)(nil)

func newReferenceStore() *referenceStore {
	return &referenceStore{states: map[refKey]algorithms.State{}}
}

func (s *referenceStore) Decide(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	if err := algorithms.CheckDecision(alg, now, cost); err != nil {
		return algorithms.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := refKey{alg.Name(), alg.Scope(), key}
	state, res := alg.Decide(s.states[k], now, cost)
	s.states[k] = state
	return res, nil
}

func (s *referenceStore) Reset(ctx context.Context, key string, alg algorithms.Algorithm) error {
	if err := algorithms.CheckKind(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, refKey{alg.Name(), alg.Scope(), key})
	return nil
}
