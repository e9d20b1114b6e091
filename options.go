package ratewise

// Option configures a Limiter. Defaults: no prefix, the system clock.
type Option interface {
	apply(*Limiter)
}

type optionFunc func(*Limiter)

func (f optionFunc) apply(l *Limiter) { f(l) }

// WithPrefix puts prefix in front of every key the limiter passes to its
// store, so that limiters sharing a store keep separate state. For example,
// with WithPrefix("login:") the key "alice" is stored as "login:alice", and a
// limiter with WithPrefix("api:") keeps its own count for "alice".
func WithPrefix(prefix string) Option {
	return optionFunc(func(l *Limiter) { l.prefix = prefix })
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
