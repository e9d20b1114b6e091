package ratewise

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// Option configures a Limiter. Defaults: no namespace, the system clock, no
// observer.
type Option interface {
	apply(*Limiter)
}

type optionFunc func(*Limiter)

func (f optionFunc) apply(l *Limiter) { f(l) }

// WithNamespace gives the limiter its own keys in a shared store: every key
// it passes to the store is namespace + ":" + key. For example, with
// WithNamespace("login") the key "alice" is stored as "login:alice", and a
// limiter with WithNamespace("api") keeps its own count for "alice".
//
// A namespace must not contain ":", so that no two namespaces and keys
// spell the same store key: New fails with ErrInvalidConfig. An empty
// namespace, the default, passes keys unchanged, so a limiter without one
// shares "login:alice" with the key "alice" of a limiter in "login".
func WithNamespace(namespace string) Option {
	return optionFunc(func(l *Limiter) { l.namespace = namespace })
}

// WithClock makes the limiter read the time from c instead of the system
// clock. Tests pass a manual clock (ratewisetest.Clock) and advance it, for
// example to check that a denied request is admitted exactly
// Result.RetryAfter later, instead of sleeping. A nil c keeps the system
// clock.
//
// A clock that also has a method Sleep(ctx context.Context, d
// time.Duration) error, returning after d or with ctx's error when ctx ends
// first, is what Wait and WaitN sleep through, so that a test's clock moves
// instead of the test sleeping; with another clock they use a timer.
func WithClock(c interface{ Now() time.Time }) Option {
	return optionFunc(func(l *Limiter) {
		if c != nil {
			l.clock = c
		}
	})
}

// WithTiers gives each key its own limit: limits chooses the algorithm, and
// so the limit, for every decision on a key: tiers, plans, a customer's
// contract. The limiter's own algorithm applies to a key for which it
// returns nil, and an error it returns is returned to the caller, wrapped.
// It runs on every decision, so it should be quick (a map or a cache, not a
// database query), and it may return different limits over time, as after
// a configuration reload: a key keeps what it used when its new algorithm
// has the same kind and scope (see "Changing limits" in package
// algorithms), and starts afresh under another. For example, free users
// get 100 per hour and paid users 10,000:
//
//	free := algorithms.SlidingWindow{Limit: 100, Window: time.Hour, SubWindows: 60}
//	paid := free
//	paid.Limit = 10_000
//	l, err := ratewise.New(s, free, ratewise.WithTiers(
//		func(ctx context.Context, user string) (algorithms.Algorithm, error) {
//			if plans.IsPaid(user) {
//				return paid, nil
//			}
//			return nil, nil
//		}))
//
// The two tiers share a kind and Scope, so a user who upgrades keeps what
// they used this hour against the new limit.
func WithTiers(limits func(ctx context.Context, key string) (algorithms.Algorithm, error)) Option {
	return optionFunc(func(l *Limiter) { l.limits = limits })
}
