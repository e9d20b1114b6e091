package httplimit

import (
	"fmt"
	"net/http"

	"github.com/ratewise/ratewise"
)

// NewMultiKey returns a middleware that limits with every limiter of multi,
// each on a key of its own, all or nothing (see ratewise.MultiKey): the
// classic case is a limit per user and a global one. keys builds a
// request's key for each limiter, in the MultiKey's order, from the KeyFuncs
// New takes; a global limit keys every request alike:
//
//	everyone := func(*http.Request) (string, error) { return "all", nil }
//	mw, err := httplimit.NewMultiKey(multi, []httplimit.KeyFunc{httplimit.ByUser(user), everyone})
//
// A request that one limit denies is charged to none, so a user whom the
// global limit turns away keeps their own quota. RateLimit-Policy lists
// every limit, named as NewStack names a Stack's: by WithQuotaName's name
// for each, such as WithQuotaName("per-user", "global"), or numbered after
// one name ("default-1", "default-2", ...). RateLimit and the X-RateLimit
// fields describe the binding one, as for a Stack: denied, the limit whose wait is longest, which is the
// Retry-After, after which every limit would admit the request if no
// other came first; admitted, the one with the least left. A request one
// of keys cannot name (ErrNoKey) is answered as WithNoKey says and
// charged to no limit.
//
// The options are New's, with two exceptions: WithKey, since keys name
// the quotas, and Fallback, which needs one Limiter; a MultiKey fails closed
// or open. Either, a nil MultiKey, a nil KeyFunc, or a number of keys other
// than the MultiKey's limiters fails with an error that wraps
// ratewise.ErrInvalidConfig.
func NewMultiKey(multi *ratewise.MultiKey, keys []KeyFunc, opts ...Option) (*Middleware, error) {
	if multi == nil {
		return nil, fmt.Errorf("httplimit: nil MultiKey: %w", ratewise.ErrInvalidConfig)
	}
	limiters := multi.Limiters()
	if len(keys) != len(limiters) {
		return nil, fmt.Errorf(
			"httplimit: %d KeyFuncs for a MultiKey of %d limiters, which takes one per limiter: %w",
			len(keys),
			len(limiters),
			ratewise.ErrInvalidConfig,
		)
	}
	for i, k := range keys {
		if k == nil {
			return nil, fmt.Errorf("httplimit: KeyFunc %d of the MultiKey is nil: %w", i, ratewise.ErrInvalidConfig)
		}
	}
	m, err := newMiddleware(opts)
	if err != nil {
		return nil, err
	}
	if m.keyOption {
		return nil, fmt.Errorf(
			"httplimit: WithKey does not apply to a MultiKey, whose keys NewMultiKey takes: %w",
			ratewise.ErrInvalidConfig,
		)
	}
	m.decider.Multi, m.decider.Limiters, m.groupKeys = multi, limiters, append([]KeyFunc(nil), keys...)
	if err := m.finish(nil); err != nil {
		return nil, err
	}
	return m, nil
}

// keysOf builds a request's key for each of the MultiKey's limiters.
func (m *Middleware) keysOf(r *http.Request) ([]string, error) {
	keys := make([]string, len(m.groupKeys))
	for i, k := range m.groupKeys {
		key, err := k(r)
		if err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}
