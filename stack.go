package ratewise

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

// Stack checks several limits on one key together, all or nothing: a request
// passes only if every limit admits it, and then every limit is charged; if
// any denies, none is charged. The classic case is a short and a long limit,
// such as 10 per second with a burst of 20 AND 1,000 per hour:
//
//	set, err := ratewise.NewStack(s, []algorithms.Algorithm{
//		algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20},
//		algorithms.SlidingLog{Limit: 1000, Window: time.Hour},
//	})
//
// Chaining two Limiters instead would spend the first limit's quota on
// requests the second denies.
//
// Each decision is one atomic step of the store (store.Store.DecideSet): on
// Redis, one script over the set's keys, which share the key's hash tag and
// so one Cluster slot. The limits must cover the same key; limits on
// different subjects (a user, their tenant, everyone) have keys in
// different slots, which no one script can reach on a Cluster: a MultiKey
// checks those. A Stack is safe for concurrent use.
type Stack struct {
	store     store.Store
	algs      []algorithms.Algorithm
	namespace string
	clock     interface{ Now() time.Time }
	// observer hears of every decision; nil for none (see WithObserver).
	observer func(context.Context, DecisionEvent)
}

// MultiResult is the outcome of one decision over a Stack or a MultiKey.
type MultiResult struct {
	// Allowed reports whether every limit admitted the request, which
	// was then charged to each.
	Allowed bool
	// Results are each limit's own Result, in the Stack's or MultiKey's order. When the
	// request was denied, a limit that denied it reports its denial and a
	// limit that would have admitted it reports what it has available
	// now, uncharged.
	Results []Result
	// Binding is the index of the limit that binds: when denied, the one
	// whose wait is longest (its RetryAfter is the Stack's); when admitted,
	// the one with the least Remaining, the next to deny.
	Binding int
	// RetryAfter is 0 when admitted, and otherwise the wait until every
	// limit would admit the same request, if nothing else arrives: the
	// longest of the denying limits' waits.
	RetryAfter time.Duration
}

// NewStack returns a Stack of algs on s, which decides them together
// (store.Store.DecideSet). It fails as New does for each algorithm, and
// with algorithms.ErrInvalidAlgorithm for two algorithms of one kind and scope,
// which would count against one state; a store that cannot decide sets
// fails each decision with store.ErrUnsupported. WithClock, WithNamespace and
// WithObserver apply as to a Limiter.
func NewStack(s store.Store, algs []algorithms.Algorithm, opts ...Option) (*Stack, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: the store is nil", ErrInvalidConfig)
	}
	if len(algs) == 0 {
		return nil, fmt.Errorf("%w: a stack needs at least one algorithm", ErrInvalidConfig)
	}
	// A Limiter per algorithm checks each as New does and applies the
	// options.
	var l *Limiter
	for _, alg := range algs {
		var err error
		if l, err = New(s, alg, opts...); err != nil {
			return nil, err
		}
	}
	if err := storecheck.Set(algs, time.Unix(0, 0), 0); err != nil {
		return nil, err
	}
	return &Stack{
		store:     s,
		algs:      append([]algorithms.Algorithm(nil), algs...),
		namespace: l.namespace,
		clock:     l.clock,
		observer:  l.observer,
	}, nil
}

// Allow is shorthand for AllowN(ctx, key, 1).
func (s *Stack) Allow(ctx context.Context, key string) (MultiResult, error) {
	return s.AllowN(ctx, key, 1)
}

// AllowN reports whether a request of cost n for key is admitted by every
// limit, and charges every limit n if it is. n must be in [1, the smallest
// limit].
func (s *Stack) AllowN(ctx context.Context, key string, n int64) (MultiResult, error) {
	if n <= 0 {
		return MultiResult{}, fmt.Errorf("%w: cost must be > 0, got %d", algorithms.ErrInvalidCost, n)
	}
	return s.decideObserved(ctx, key, n)
}

// PeekN reports whether a request of cost n for key would be admitted by
// every limit now, and each limit's state, without consuming anything, as
// Limiter.PeekN does for one. n must be in [1, the smallest limit].
func (s *Stack) PeekN(ctx context.Context, key string, n int64) (MultiResult, error) {
	if n <= 0 {
		return MultiResult{}, fmt.Errorf("%w: cost must be > 0, got %d", algorithms.ErrInvalidCost, n)
	}
	return s.decideObserved(ctx, key, -n) // a negative cost inspects (algo.Decide)
}

// Refund gives back n units of what an admission of the Stack charged (res,
// from AllowN), to every limit: each into the state its Result names
// (Result.Charged), as Limiter.Refund gives back one, whatever the key's
// limits are now, and never more than if the units had never been charged.
// It returns each limit's state afterwards, as a PeekN under the algorithm
// it charged reports it. A denied res is ErrNotAdmitted, an n outside
// [1, the admission's cost] algorithms.ErrInvalidCost, and a store that cannot refund
// (store.Store.Refund) store.ErrUnsupported. Each limit is refunded in a round trip
// of its own; an error on one is returned, joined with the others', after
// every limit has been tried, and retrying the whole refund with the same
// request ID (WithRequestID) gives back only what was not given back yet.
func (s *Stack) Refund(ctx context.Context, key string, res MultiResult, n int64) (MultiResult, error) {
	if key == "" {
		return MultiResult{}, ErrEmptyKey
	}
	if !res.Allowed || len(res.Results) == 0 {
		return MultiResult{}, ErrNotAdmitted
	}
	type charge struct {
		alg  algorithms.Algorithm
		cost int64
	}
	charges := make([]charge, len(res.Results))
	for i, r := range res.Results {
		alg, cost := r.Charged()
		if alg == nil {
			return MultiResult{}, fmt.Errorf("%w: limit %d of the set", ErrNotAdmitted, i)
		}
		if n <= 0 || n > cost {
			return MultiResult{}, fmt.Errorf(
				"%w: a refund must be in [1, %d], the cost the admission was charged, got %d",
				algorithms.ErrInvalidCost,
				cost,
				n,
			)
		}
		charges[i] = charge{alg, cost}
	}
	now := s.clock.Now()
	out := MultiResult{Allowed: true, Results: make([]Result, len(res.Results))}
	var errs []error
	for i, c := range charges {
		r, err := s.store.Refund(ctx, store.Key{Namespace: s.namespace, Name: key}, c.alg, now, res.Results[i].At, n)
		if err != nil {
			errs = append(errs, fmt.Errorf("limit %d: %w", i, err))
			continue
		}
		out.Results[i] = r
	}
	if len(errs) > 0 {
		return MultiResult{}, errors.Join(errs...)
	}
	return combine(out.Results), nil
}

// Algorithms returns the Stack's algorithms, in order.
func (s *Stack) Algorithms() []algorithms.Algorithm {
	return append([]algorithms.Algorithm(nil), s.algs...)
}

func (s *Stack) decideObserved(ctx context.Context, key string, cost int64) (MultiResult, error) {
	if key == "" {
		return MultiResult{}, ErrEmptyKey
	}
	if s.observer == nil {
		return s.decideStore(ctx, key, cost)
	}
	start := time.Now()
	sr, err := s.decideStore(ctx, key, cost)
	e := DecisionEvent{
		Stack:        true,
		Algorithm:    s.algs[sr.Binding],
		Binding:      sr.Binding,
		Key:          key,
		Cost:         peekCost(cost),
		Peek:         cost <= 0,
		StoreLatency: time.Since(start),
		Err:          err,
	}
	if err == nil {
		e.Result = sr.Results[sr.Binding]
	}
	s.observer(ctx, e)
	return sr, err
}

// decideStore asks the store for one decision over the Stack.
func (s *Stack) decideStore(ctx context.Context, key string, cost int64) (MultiResult, error) {
	results, err := s.store.DecideSet(ctx, store.Key{Namespace: s.namespace, Name: key}, s.algs, s.clock.Now(), cost)
	if err != nil {
		return MultiResult{}, err
	}
	if len(results) != len(s.algs) {
		return MultiResult{}, fmt.Errorf("%w: %d results for %d limits", store.ErrUnavailable, len(results), len(s.algs))
	}
	return combine(results), nil
}

// combine is the Stack's answer from each limit's.
func combine(results []Result) MultiResult {
	out := MultiResult{Allowed: true, Results: results}
	for i, r := range results {
		if !r.Allowed {
			if out.Allowed || r.RetryAfter > out.RetryAfter {
				out.Binding, out.RetryAfter = i, r.RetryAfter
			}
			out.Allowed = false
		}
	}
	if out.Allowed {
		for i, r := range results {
			if r.Remaining < results[out.Binding].Remaining {
				out.Binding = i
			}
		}
	}
	return out
}
