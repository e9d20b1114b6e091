package ratewise

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
// spell the same store key: New fails with ErrInvalidNamespace. An empty
// namespace, the default, passes keys unchanged, so a limiter without one
// shares "login:alice" with the key "alice" of a limiter in "login".
func WithNamespace(namespace string) Option {
	return optionFunc(func(l *Limiter) { l.namespace = namespace })
}

// WithClock makes the limiter read the time from c instead of the system
// clock. Tests pass a manual clock and advance it, for example to check that
// a denied request is admitted exactly Result.RetryAfter later. A nil c keeps
// the system clock.
func WithClock(c Clock) Option {
	return optionFunc(func(l *Limiter) {
		if c != nil {
			l.clock = c
		}
	})
}

// WithTiers gives each key its own limit: limits chooses the algorithm for
// every decision on a key (see TierFunc), and the limiter's own algorithm
// applies to a key for which it returns nil. For example, free users get 100
// per hour and paid users 10,000:
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
func WithTiers(limits TierFunc) Option {
	return optionFunc(func(l *Limiter) { l.limits = limits })
}
