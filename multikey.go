package ratewise

import (
	"context"
	"errors"
	"fmt"
)

// MultiKey checks limits on different subjects together, such as a user's,
// their tenant's and a global limit: a request passes only if every limit
// admits it, each on its own key. Unlike a Stack, whose limits share one key
// and are decided in one atomic step, a MultiKey's keys may live on different
// Redis Cluster nodes, so it decides in two phases, one round trip per
// limit in each:
//
//  1. It peeks at every limit (PeekN). If any would deny, the request is
//     denied and nothing is charged. This is where almost every denial is
//     decided.
//  2. Otherwise it charges the limits in order. If one denies after all,
//     because other requests took what the peek saw, the limits already
//     charged are refunded at once (Limiter.Refund) and the request is
//     denied.
//
// No limit ever admits beyond what it allows: each charge is atomic on its
// own key. A denied request is charged nothing in phase 1. In the race of
// phase 2, a refund made before any other request reaches that key gives
// back exactly what was charged; if others came in between, it gives back
// what Refund documents: a token bucket or GCRA loses what refilled during
// the round trip (microseconds' worth), a sliding log frees its oldest
// units rather than the refunded ones, so it is short of one request's
// cost until the refunded request would have expired. It never gives back
// more than was charged. A MultiKey is safe for concurrent use.
type MultiKey struct {
	limiters []*Limiter
}

// NewMultiKey returns a MultiKey of limiters, checked in order. Each
// limiter's store must be able to refund (store.Store.Refund), as the
// memory, Redis and PostgreSQL stores can: a MultiKey gives back what it
// charged when a later limit denies or fails. No limiters, or a nil one,
// is ErrInvalidConfig.
func NewMultiKey(limiters ...*Limiter) (*MultiKey, error) {
	if len(limiters) == 0 {
		return nil, fmt.Errorf("%w: no limiters", ErrInvalidConfig)
	}
	for i, l := range limiters {
		if l == nil {
			return nil, fmt.Errorf("%w: limiter %d is nil", ErrInvalidConfig, i)
		}
	}
	return &MultiKey{limiters: append([]*Limiter(nil), limiters...)}, nil
}

// Limiters returns the MultiKey's limiters, in order: limiter i decides on
// keys[i].
func (g *MultiKey) Limiters() []*Limiter {
	return append([]*Limiter(nil), g.limiters...)
}

// AllowN reports whether a request of cost n is admitted by every limiter,
// limiter i on keys[i], and charges each if it is. The MultiResult is as a
// Stack's: every limit's Result, the binding one, and RetryAfter the wait
// until all would admit. An error from any limiter is returned after the
// limits already charged have been refunded, even when the error is ctx's;
// the refund's own error, if any, is joined to it. A number of keys other
// than the number of limiters is ErrInvalidConfig.
func (g *MultiKey) AllowN(ctx context.Context, keys []string, n int64) (MultiResult, error) {
	if len(keys) != len(g.limiters) {
		return MultiResult{}, fmt.Errorf("%w: %d keys for %d limiters", ErrInvalidConfig, len(keys), len(g.limiters))
	}
	results := make([]Result, len(keys))
	for i, l := range g.limiters {
		res, err := l.PeekN(ctx, keys[i], n)
		if err != nil {
			return MultiResult{}, err
		}
		results[i] = res
	}
	if sr := combine(results); !sr.Allowed {
		return sr, nil
	}
	for i, l := range g.limiters {
		res, err := l.AllowN(ctx, keys[i], n)
		if err != nil || !res.Allowed {
			if rerr := g.refund(ctx, keys[:i], results[:i], n); rerr != nil {
				err = errors.Join(err, rerr)
			}
			if err != nil {
				return MultiResult{}, err
			}
			// The others report what they have now, uncharged, as in a
			// Stack's denial.
			results[i] = res
			for j := range i {
				if results[j], err = g.limiters[j].PeekN(ctx, keys[j], n); err != nil {
					return MultiResult{}, err
				}
			}
			return combine(results), nil
		}
		results[i] = res
	}
	return combine(results), nil
}

// refund gives back the charges of the first limiters, in reverse order,
// whether or not ctx has ended.
func (g *MultiKey) refund(ctx context.Context, keys []string, charged []Result, n int64) error {
	ctx, cancel := detached(ctx)
	defer cancel()
	var errs []error
	for i := len(keys) - 1; i >= 0; i-- {
		if _, err := g.limiters[i].Refund(ctx, keys[i], charged[i], n); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
