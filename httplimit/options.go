package httplimit

import (
	"fmt"
	"net/http"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

// An Option configures a Middleware.
type Option interface {
	apply(*Middleware) error
}

type optionFunc func(*Middleware) error

func (f optionFunc) apply(m *Middleware) error { return f(m) }

// WithKey sets how requests are keyed, for example
//
//	httplimit.WithKey(httplimit.Composite(httplimit.ByUser(user), httplimit.ByPath()))
//
// for one quota per user and path. A MultiKey's keys are NewMultiKey's instead.
func WithKey(k KeyFunc) Option {
	return optionFunc(func(m *Middleware) error {
		if k == nil {
			return fmt.Errorf("httplimit: nil KeyFunc: %w", ratewise.ErrInvalidConfig)
		}
		m.key, m.keyOption = k, true
		return nil
	})
}

// WithCost sets what each request costs, for example more for an expensive
// route or in proportion to the request's size. An error answers the
// request with the failure handler. A cost above the limit could never be
// admitted and is answered with 413 Content Too Large.
func WithCost(cost func(*http.Request) (int64, error)) Option {
	return optionFunc(func(m *Middleware) error {
		if cost == nil {
			return fmt.Errorf("httplimit: nil cost function: %w", ratewise.ErrInvalidConfig)
		}
		m.cost = cost
		return nil
	})
}

// WithDeniedHandler replaces the 429 response. The RateLimit headers are
// already set when it runs; Retry-After is the handler's to set, from
// res.RetryAfter (RetryAfterSeconds rounds it as the default does).
func WithDeniedHandler(h func(w http.ResponseWriter, r *http.Request, res ratewise.Result)) Option {
	return optionFunc(func(m *Middleware) error {
		if h == nil {
			return fmt.Errorf("httplimit: nil denied handler: %w", ratewise.ErrInvalidConfig)
		}
		m.denied = h
		return nil
	})
}

// WithFailureHandler replaces the response to a request that could not be
// decided: err is a *StoreError when the store failed and the policy did
// not let the request through, or the key or cost function's error.
func WithFailureHandler(h func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return optionFunc(func(m *Middleware) error {
		if h == nil {
			return fmt.Errorf("httplimit: nil failure handler: %w", ratewise.ErrInvalidConfig)
		}
		m.failed = h
		return nil
	})
}

// WithOnError sets the hook that hears of every failure to decide a
// request: store failures and timeouts, before the policy acts, and every
// other error that fails a request with 500, such as a key function's, or
// the request's own context ending (a client that went away) before the
// decision. (A cost above the limit, answered 413, is the client's error and
// is not reported.) Wire it to logs or metrics. The default logs a warning with
// log/slog.
func WithOnError(hook func(r *http.Request, err error)) Option {
	return optionFunc(func(m *Middleware) error {
		if hook == nil {
			return fmt.Errorf("httplimit: nil OnError hook; a store failure must be observable: %w", ratewise.ErrInvalidConfig)
		}
		m.onError = hook
		return nil
	})
}

// WithFailureMode sets what happens when the store fails: FailClosed (the
// default), FailOpen or Fallback.
func WithFailureMode(p FailureMode) Option {
	return optionFunc(func(m *Middleware) error {
		if p == nil {
			return fmt.Errorf("httplimit: nil failure mode: %w", ratewise.ErrInvalidConfig)
		}
		m.policy = p
		return nil
	})
}

// WithTimeout bounds each decision: a store that has not answered after d
// counts as failed, and the policy decides. The default is 500ms; 0 waits
// for the store however long it takes. The decision runs under a context with d's deadline, and
// the store contract has stores honour it; for storeredis that takes a
// go-redis client with ContextTimeoutEnabled (see docs/redis.md, "Client
// settings"), without which a stalled Redis holds a request for the
// client's own socket timeouts instead.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(m *Middleware) error {
		if d < 0 {
			return fmt.Errorf("httplimit: timeout must be >= 0, got %v: %w", d, ratewise.ErrInvalidConfig)
		}
		m.decider.Timeout = d
		return nil
	})
}

// WithLegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (seconds until the key is back at full capacity) to the
// draft fields.
func WithLegacyHeaders() Option {
	return optionFunc(func(m *Middleware) error { m.headers.legacy = true; return nil })
}

// WithoutDraftHeaders leaves out RateLimit-Policy and RateLimit.
func WithoutDraftHeaders() Option {
	return optionFunc(func(m *Middleware) error { m.headers.draft = false; return nil })
}

// WithQuotaName names the quotas in the RateLimit-Policy and RateLimit
// fields, which the draft calls quota policies; the default is "default".
// A middleware from New takes one name. One from NewStack or NewMultiKey
// takes one name per limit, in the set's or the MultiKey's order, or one
// name, which is numbered after it ("default-1", "default-2", ...):
//
//	httplimit.NewMultiKey(multi, keys, httplimit.WithQuotaName("per-user", "global"))
//
// Each name must be a valid structured-field string: printable ASCII, not
// empty, and no name may come twice; that, and any other number of names,
// fails construction with an error that wraps ratewise.ErrInvalidConfig.
// A route's quota is named by the route instead (see Route).
func WithQuotaName(names ...string) Option {
	return optionFunc(func(m *Middleware) error {
		if err := ratelimitheader.CheckNames(names); err != nil {
			return fmt.Errorf("httplimit: %w", err)
		}
		m.names = append([]string(nil), names...)
		return nil
	})
}

// WithExempt lets the requests exempt reports true for through without
// limiting them, counting them or setting headers: health checks, internal
// callers, an allow-list.
func WithExempt(exempt func(r *http.Request) bool) Option {
	return optionFunc(func(m *Middleware) error {
		if exempt == nil {
			return fmt.Errorf("httplimit: nil exempt function: %w", ratewise.ErrInvalidConfig)
		}
		m.exempt = exempt
		return nil
	})
}

// WithDryRun rolls a limit out in shadow mode: every request is decided and
// counted and gets its RateLimit headers, but none is refused. wouldDeny
// hears of each request the limit would have answered with 429, with its
// Result; every error that would have failed a request still reaches the
// OnError hook, and the request goes on.
func WithDryRun(wouldDeny func(r *http.Request, res ratewise.Result)) Option {
	return optionFunc(func(m *Middleware) error {
		if wouldDeny == nil {
			return fmt.Errorf("httplimit: nil dry-run hook: %w", ratewise.ErrInvalidConfig)
		}
		m.dryRun = wouldDeny
		return nil
	})
}

// WithNoKey sets the answer to a request the KeyFunc cannot name, one that
// fails with ErrNoKey, such as an anonymous request under ByUser: a status
// such as http.StatusUnauthorized (401) or http.StatusBadRequest (400), or
// NoKeyUnlimited to let it through without limiting. Such a request is then
// answered as chosen, not failed, so the OnError hook does not hear of it
// (and the default hook logs no warning); count such requests in the
// KeyFunc if they matter. Without WithNoKey such a request goes to the
// failure handler, whose default answer is 500, and the OnError hook hears
// of it, since a key the server cannot build is usually a
// misconfiguration; to key anonymous requests by something else instead,
// use FirstOf.
func WithNoKey(status int) Option {
	return optionFunc(func(m *Middleware) error {
		if status != NoKeyUnlimited && (status < 400 || status > 599) {
			return fmt.Errorf(
				"httplimit: the answer to a request without a key must be a 4xx or 5xx status or NoKeyUnlimited, "+
					"got %d: %w",
				status,
				ratewise.ErrInvalidConfig,
			)
		}
		m.noKey = status
		return nil
	})
}

// NoKeyUnlimited, given to WithNoKey, lets requests without a key through
// unlimited.
const NoKeyUnlimited = 0
