// Package ratewise limits how often each key (a user, an IP, an API path or a
// composite of them) may do something, with the algorithm that fits the
// workload and the store that fits the deployment.
//
// A Limiter combines a store (storememory for tests and single processes,
// storeredis for many app instances sharing one limit) with an algorithm from
// package algorithms. Every call returns a Result; being limited is
// Result.Allowed == false, never an error. An error means the input was
// invalid or the store failed, and must not be treated as allowed.
package ratewise

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// Result is the outcome of one decision; see algorithms.Result for the exact
// meaning of every field.
type Result = algorithms.Result

// Limiter limits events per key. It is safe for simultaneous use by many
// goroutines. Limiters that share a store share state when they use the same
// algorithm with the same window or period (its algorithms.Scope) and the
// same key in the same namespace: a per-second and a per-hour limit on one
// key are independent, while two limiters that differ only in their limit
// count against one quota. Give limiters their own namespace (WithNamespace)
// unless that is what you want.
//
// Most callers want Allow. AllowN weighs a request, Peek looks without
// consuming, and Reset forgets a key.
type Limiter struct {
	store store.Store
	alg   algorithms.Algorithm
	// prefix is the namespace and its separator, or "" for none.
	namespace, prefix string
	clock             Clock
}

// New returns a limiter that runs alg on s. It fails with ErrNilStore,
// ErrNilAlgorithm, ErrUnknownAlgorithm for a type that only embeds one of
// package algorithms' types, an error from alg.Validate wrapping one of the
// algorithms package's sentinels (re-exported here, such as
// ErrInvalidLimit), ErrUnsupported when the store cannot run alg, or
// ErrInvalidNamespace.
func New(s store.Store, alg algorithms.Algorithm, opts ...Option) (*Limiter, error) {
	if s == nil {
		return nil, ErrNilStore
	}
	if alg == nil {
		return nil, ErrNilAlgorithm
	}
	if err := algorithms.CheckKind(alg); err != nil {
		return nil, err
	}
	if err := alg.Validate(); err != nil {
		return nil, err
	}
	if c, ok := s.(store.AlgorithmChecker); ok {
		if err := c.CheckAlgorithm(alg); err != nil {
			return nil, err
		}
	}
	l := &Limiter{store: s, alg: alg, clock: systemClock{}}
	for _, o := range opts {
		o.apply(l)
	}
	if strings.Contains(l.namespace, ":") {
		return nil, fmt.Errorf("%w, got %q", ErrInvalidNamespace, l.namespace)
	}
	if l.namespace != "" {
		l.prefix = l.namespace + ":"
	}
	return l, nil
}

// Allow is shorthand for AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN reports whether a request of cost n for key is admitted now, and
// consumes n if it is. A denied request consumes nothing. n must be in
// [1, the algorithm's limit]: a larger n could never be admitted and fails
// with ErrCostExceedsLimit.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Result, error) {
	if n <= 0 {
		return Result{}, fmt.Errorf("%w: cost must be > 0, got %d", ErrInvalidCost, n)
	}
	if err := algorithms.CheckCost(l.alg, n); err != nil {
		return Result{}, err
	}
	return l.decide(ctx, key, n)
}

// Peek reports key's state without consuming anything: Allowed says whether
// a request of cost 1 would be admitted now, Remaining what is available now,
// and RetryAfter how long until a request of cost 1 would be admitted.
func (l *Limiter) Peek(ctx context.Context, key string) (Result, error) {
	return l.decide(ctx, key, 0)
}

// Reset forgets key, which is then at full capacity.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	return l.store.Reset(ctx, l.prefix+key, l.alg)
}

// Algorithm returns the limiter's algorithm.
func (l *Limiter) Algorithm() algorithms.Algorithm { return l.alg }

func (l *Limiter) decide(ctx context.Context, key string, cost int64) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	return l.store.Decide(ctx, l.prefix+key, l.alg, l.clock.Now(), cost)
}

// Clock tells a Limiter the time. Tests inject one with WithClock to step
// through synthetic instants instead of sleeping.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
