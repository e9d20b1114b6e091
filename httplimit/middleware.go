// Package httplimit is ratewise's net/http middleware: it builds a key for
// each request (the user, the client IP, the route, or a composite), asks a
// ratewise.Limiter, and answers over-limit requests with 429 Too Many
// Requests and a Retry-After that a client can trust.
//
// Every response it lets through or denies carries the IETF draft fields
// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers),
// and optionally the legacy X-RateLimit-* trio. When the store fails or is
// slower than the decision timeout, a FailureMode decides: fail closed (the
// default, 503), fail open, or fall back to a local in-memory limiter with
// a share of the limit. Every store failure reaches the OnError hook, which
// logs by default, so no failure is ever a silent allow.
//
// One middleware can give each route a limit of its own with Route, such
// as 5 login attempts per 15 minutes beside the limiter's 100 requests a
// minute, sharing every other option.
//
// Several limits apply to a request all or nothing, so that one that
// denies it leaves the others uncharged, with NewStack when they share a
// key (10 a second and 1,000 an hour per client) and with NewMultiKey when
// each has its own (a limit per user and a global one). Chaining
// middlewares instead charges the outer limits for requests an inner one
// denies. The RateLimit fields then describe the binding limit, and
// Retry-After is the wait after which every limit admits the request.
package httplimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/failmode"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

// Middleware limits requests to an http.Handler. Create it with New,
// NewStack or NewMultiKey; Route derives one with another limit for a route,
// sharing the options. It is safe for simultaneous use by many goroutines.
type Middleware struct {
	// decider holds the limits (a Limiter, a route's algorithm, a Stack or
	// a MultiKey), the failure mode and the decision timeout, and decides
	// each request as grpclimit's interceptors do.
	decider failmode.Decider
	key     KeyFunc
	cost    func(*http.Request) (int64, error)
	denied  func(http.ResponseWriter, *http.Request, ratewise.Result)
	failed  func(http.ResponseWriter, *http.Request, error)
	onError func(*http.Request, error)
	// groupKeys, for NewMultiKey, build a key for each of the MultiKey's
	// limiters, in place of key.
	groupKeys []KeyFunc
	// keyOption reports that WithKey set key, which a MultiKey refuses.
	keyOption bool
	// observer hears of every degraded decision; nil for none.
	observer func(context.Context, DegradedEvent)
	policy   FailureMode
	headers  headerSet
	// names are WithQuotaName's; quotas are each limit's name, quoted as
	// the RateLimit fields carry it, and quota the DegradedEvent's Quota.
	names  []string
	quotas []string
	quota  string
	exempt func(*http.Request) bool
	dryRun func(*http.Request, ratewise.Result)
	// noKey answers a request its KeyFunc cannot name (ErrNoKey): with
	// this status, by letting it through unlimited (NoKeyUnlimited), or,
	// when unset (noKeyDefault), with the failure handler.
	noKey int
	// routes are the routes of a middleware from New (see Route), shared
	// by its routes. A route's routeKey goes before every key it decides;
	// it is unset on the middleware New returns.
	routes   *routeTable
	routeKey string
}

// noKeyDefault leaves a request without a key to the failure handler.
const noKeyDefault = -1

// defaultTimeout bounds each decision unless WithTimeout says otherwise.
const defaultTimeout = 500 * time.Millisecond

// New returns a middleware that limits with l. By default it keys requests
// by the connection's IP address (see ByIP), costs each request 1, fails
// closed with 503 when the store fails, bounds each decision by
// 500ms, and logs store failures with log/slog. A nil l or an invalid
// option fails with an error that wraps ratewise.ErrInvalidConfig.
func New(l *ratewise.Limiter, opts ...Option) (*Middleware, error) {
	if l == nil {
		return nil, fmt.Errorf("httplimit: nil limiter: %w", ratewise.ErrInvalidConfig)
	}
	m, err := newMiddleware(opts)
	if err != nil {
		return nil, err
	}
	m.decider.Limiter = l
	m.routes = &routeTable{byName: make(map[string]*Middleware)}
	if err := m.finish(l); err != nil {
		return nil, err
	}
	return m, nil
}

// NewStack returns a middleware that limits with every limit of set at once,
// all or nothing (see ratewise.Stack), such as 10 per second AND 1,000 per
// hour on one route. RateLimit-Policy lists every limit, under
// WithQuotaName's names: one name per limit, in the set's order, or one
// name numbered after it ("default-1", "default-2", ...); RateLimit reports
// the binding one: the one whose wait a denied request has, or that has the
// least left. The options are New's, except that Fallback, which needs one
// Limiter, is refused.
func NewStack(set *ratewise.Stack, opts ...Option) (*Middleware, error) {
	if set == nil {
		return nil, fmt.Errorf("httplimit: nil set: %w", ratewise.ErrInvalidConfig)
	}
	m, err := newMiddleware(opts)
	if err != nil {
		return nil, err
	}
	m.decider.Stack = set
	if err := m.finish(nil); err != nil {
		return nil, err
	}
	return m, nil
}

// newMiddleware applies opts to the defaults New documents.
func newMiddleware(opts []Option) (*Middleware, error) {
	byIP, _ := ByIP(IPConfig{})
	m := &Middleware{
		key:     byIP,
		cost:    func(*http.Request) (int64, error) { return 1, nil },
		policy:  FailClosed(http.StatusServiceUnavailable, time.Second),
		headers: headerSet{draft: true},
		names:   []string{"default"},
		noKey:   noKeyDefault,
		onError: func(r *http.Request, err error) {
			slog.Default().
				Warn("httplimit: could not rate-limit a request", "method", r.Method, "path", r.URL.Path, "err", err)
		},
	}
	m.decider.Timeout = defaultTimeout
	m.denied = m.writeDenied
	m.failed = m.writeFailed
	for _, o := range opts {
		if err := o.apply(m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// finish checks the failure mode for a middleware that limits with l, or
// with the decider's Stack or MultiKey when l is nil, and names each limit.
func (m *Middleware) finish(l *ratewise.Limiter) error {
	mode, err := m.policy.failure().check(l)
	if err != nil {
		return err
	}
	m.decider.Mode = mode
	if m.quotas, err = ratelimitheader.Names(m.names, m.decider.Limits()); err != nil {
		return fmt.Errorf("httplimit: %w", err)
	}
	m.quota = ratelimitheader.Quota(m.names)
	return nil
}

// Handler wraps next.
func (m *Middleware) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m.exempt != nil && m.exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		// In dry-run mode nothing is denied: what would fail a request is
		// reported and the request goes on.
		fail := func(err error) {
			if m.dryRun != nil {
				next.ServeHTTP(w, r)
				return
			}
			m.failed(w, r, err)
		}
		var key string
		var keys []string // a MultiKey's, in place of key
		var err error
		if m.decider.Multi != nil {
			keys, err = m.keysOf(r)
		} else {
			key, err = m.key(r)
		}
		if err != nil {
			switch {
			case !errors.Is(err, ErrNoKey) || m.noKey == noKeyDefault:
				m.onError(r, err)
				fail(err)
			case m.noKey == NoKeyUnlimited || m.dryRun != nil:
				// WithNoKey chose the answer: no failure, so the OnError
				// hook does not hear of it.
				next.ServeHTTP(w, r)
			default:
				http.Error(w, http.StatusText(m.noKey), m.noKey)
			}
			return
		}
		// A route's quotas are its own (see Route).
		key = m.routeKey + key
		cost, err := m.cost(r)
		if err != nil {
			m.onError(r, err)
			fail(err)
			return
		}
		out := m.decider.Decide(r.Context(), key, keys, cost, func(err error) { m.onError(r, err) })
		if out.Degraded && m.observer != nil {
			m.observer(r.Context(), DegradedEvent{
				Mode:    m.decider.Mode.Name(),
				Allowed: out.Allowed,
				Quota:   m.quota,
				Err:     out.StoreErr,
			})
		}
		switch out.Verdict {
		case failmode.Fail:
			if out.StoreFailed {
				fail(&StoreError{Err: out.Err, policy: m.policy})
				return
			}
			// A cost above the limit is a 413; anything else a 500.
			fail(out.Err)
			return
		case failmode.Unlimited:
			// Failed open: there is no decision to describe.
			next.ServeHTTP(w, r)
			return
		}
		m.setHeaders(w.Header(), out.Decision, out.Algorithms)
		if out.Verdict == failmode.Deny {
			if m.dryRun != nil {
				m.dryRun(r, out.Decision.Result)
				next.ServeHTTP(w, r)
				return
			}
			m.denied(w, r, out.Decision.Result)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// StoreError is the error the failure handler gets when the store failed
// and the policy did not let the request through.
type StoreError struct {
	Err    error
	policy FailureMode
}

func (e *StoreError) Error() string { return "httplimit: rate limit store failed: " + e.Err.Error() }

func (e *StoreError) Unwrap() error { return e.Err }

func (m *Middleware) writeDenied(w http.ResponseWriter, _ *http.Request, res ratewise.Result) {
	w.Header().Set(ratelimitheader.RetryAfter, fmt.Sprint(RetryAfterSeconds(res.RetryAfter)))
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusTooManyRequests)
	fmt.Fprint(w, "Too Many Requests\n")
}

// writeFailed answers a request the middleware could not decide: 503 or 429
// per the fail-closed policy after a store failure (503 when a fallback
// failed too), 413 for a cost above the
// limit, and 500 for anything else: a key or cost that could not be
// computed, such as ByUser's ErrNoKey for an anonymous request, or an error
// that is no store failure, such as an algorithm the store cannot run.
func (m *Middleware) writeFailed(w http.ResponseWriter, _ *http.Request, err error) {
	var se *StoreError
	if errors.As(err, &se) {
		if f := se.policy.failure(); f.mode.Name() == failmode.ClosedName {
			if d := f.mode.RetryAfter(); d > 0 {
				w.Header().Set(ratelimitheader.RetryAfter, fmt.Sprint(RetryAfterSeconds(d)))
			}
			http.Error(w, http.StatusText(f.status), f.status)
			return
		}
		// A fallback whose local limiter failed too: as FailClosed(503, 0).
		http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
		return
	}
	if errors.Is(err, algorithms.ErrCostExceedsLimit) {
		http.Error(w, http.StatusText(http.StatusRequestEntityTooLarge), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}
