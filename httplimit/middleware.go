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
	"github.com/ratewise/ratewise/store"
)

// Middleware limits requests to an http.Handler. Create it with New,
// NewStack or NewMultiKey; Route derives one with another limit for a route,
// sharing the options. It is safe for simultaneous use by many goroutines.
type Middleware struct {
	limiter *ratewise.Limiter
	set     *ratewise.Stack // instead of limiter, for NewStack
	key     KeyFunc
	cost    func(*http.Request) (int64, error)
	denied  func(http.ResponseWriter, *http.Request, ratewise.Result)
	failed  func(http.ResponseWriter, *http.Request, error)
	onError func(*http.Request, error)
	// group, for NewMultiKey, limits instead of limiter, with its limiters
	// on the keys groupKeys build, one for each, in place of key.
	group         *ratewise.MultiKey
	groupLimiters []*ratewise.Limiter
	groupKeys     []KeyFunc
	// keyOption reports that WithKey set key, which a MultiKey refuses.
	keyOption bool
	// observer hears of every degraded decision; nil for none.
	observer func(context.Context, DegradedEvent)
	policy   FailureMode
	timeout  time.Duration
	headers  headerSet
	name     string
	exempt   func(*http.Request) bool
	dryRun   func(*http.Request, ratewise.Result)
	// noKey answers a request its KeyFunc cannot name (ErrNoKey): with
	// this status, by letting it through unlimited (NoKeyUnlimited), or,
	// when unset (noKeyDefault), with the failure handler.
	noKey int
	// routes are the routes of a middleware from New (see Route), shared
	// by its routes. A route's routeAlg is its limit, in place of the
	// limiter's, and routeKey goes before every key it decides; both are
	// unset on the middleware New returns.
	routes   *routeTable
	routeAlg algorithms.Algorithm
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
	m.limiter = l
	m.routes = &routeTable{byName: make(map[string]*Middleware)}
	if err := m.policy.check(l); err != nil {
		return nil, err
	}
	return m, nil
}

// NewStack returns a middleware that limits with every limit of set at once,
// all or nothing (see ratewise.Stack), such as 10 per second AND 1,000 per
// hour on one route. RateLimit-Policy lists every limit, named by
// WithQuotaName's name and the limit's place in the set ("default-1",
// "default-2", ...), and RateLimit reports the binding one: the one whose
// wait a denied request has, or that has the least left. The options are
// New's, except that Fallback, which needs one Limiter, is refused.
func NewStack(set *ratewise.Stack, opts ...Option) (*Middleware, error) {
	if set == nil {
		return nil, fmt.Errorf("httplimit: nil set: %w", ratewise.ErrInvalidConfig)
	}
	m, err := newMiddleware(opts)
	if err != nil {
		return nil, err
	}
	if _, ok := m.policy.(fallback); ok {
		return nil, fmt.Errorf(
			"httplimit: Fallback needs a Limiter; a Stack fails closed or open: %w",
			ratewise.ErrInvalidConfig,
		)
	}
	if err := m.policy.check(nil); err != nil {
		return nil, err
	}
	m.set = set
	return m, nil
}

// newMiddleware applies opts to the defaults New documents.
func newMiddleware(opts []Option) (*Middleware, error) {
	byIP, _ := ByIP(IPConfig{})
	m := &Middleware{
		key:     byIP,
		cost:    func(*http.Request) (int64, error) { return 1, nil },
		policy:  FailClosed(http.StatusServiceUnavailable, time.Second),
		timeout: defaultTimeout,
		headers: headerSet{draft: true},
		name:    "default",
		noKey:   noKeyDefault,
		onError: func(r *http.Request, err error) {
			slog.Default().
				Warn("httplimit: could not rate-limit a request", "method", r.Method, "path", r.URL.Path, "err", err)
		},
	}
	m.denied = m.writeDenied
	m.failed = m.writeFailed
	for _, o := range opts {
		if err := o.apply(m); err != nil {
			return nil, err
		}
	}
	return m, nil
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
		if m.group != nil {
			keys, err = m.keysOf(r)
		} else {
			key, err = m.key(r)
		}
		if err != nil {
			m.onError(r, err)
			switch {
			case !errors.Is(err, ErrNoKey) || m.noKey == noKeyDefault:
				fail(err)
			case m.noKey == NoKeyUnlimited || m.dryRun != nil:
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
		// The limits the headers describe: a Stack's, a route's, or the
		// key's own (see ratewise.WithTiers), for a MultiKey each key's.
		var algs []algorithms.Algorithm
		switch {
		case m.group != nil:
			if algs, err = m.groupAlgorithms(r.Context(), keys); err != nil {
				m.onError(r, err)
				fail(err)
				return
			}
		case m.set != nil:
			algs = m.set.Algorithms()
		case m.routeAlg != nil:
			algs = []algorithms.Algorithm{m.routeAlg}
		default:
			alg, err := m.limiter.AlgorithmFor(r.Context(), key)
			if err != nil {
				m.onError(r, err)
				fail(err)
				return
			}
			algs = []algorithms.Algorithm{alg}
		}
		d, err := m.decide(r.Context(), key, keys, algs, cost)
		res := d.res
		if err != nil {
			switch {
			case errors.Is(err, algorithms.ErrCostExceedsLimit):
				// The request asked for more than the limit: 413, the
				// client's error, not the server's.
				fail(err)
				return
			case !m.storeFailure(r, err):
				// Anything else is a bug or a misconfiguration, such as an
				// algorithm the store cannot run or a clock out of range:
				// the policy must not hide it.
				m.onError(r, err)
				fail(err)
				return
			}
			m.onError(r, err)
			var ok bool
			res, ok = m.policy.answer(r, key, cost, err) // a MultiKey takes no Fallback, the one policy that reads key
			if m.observer != nil {
				// Failing open answers with no Result, and lets the
				// request through.
				m.observer(r.Context(), DegradedEvent{
					Mode:    m.policy.name(),
					Allowed: ok && (res.Allowed || res == (ratewise.Result{})),
					Quota:   m.name,
					Err:     err,
				})
			}
			if !ok {
				fail(&StoreError{Err: err, policy: m.policy})
				return
			}
			d = decision{res: res, results: []ratewise.Result{res}}
			if res == (ratewise.Result{}) {
				// Failed open: there is no decision to describe.
				next.ServeHTTP(w, r)
				return
			}
		}
		m.setHeaders(w.Header(), d, algs)
		if !res.Allowed {
			if m.dryRun != nil {
				m.dryRun(r, res)
				next.ServeHTTP(w, r)
				return
			}
			m.denied(w, r, res)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// decision is what the middleware decided: the request's Result (for a
// Stack or a MultiKey, the binding limit's), every limit's Result, and which of
// them binds.
type decision struct {
	res     ratewise.Result
	results []ratewise.Result
	binding int
}

// decide runs the limiter, the Stack or the MultiKey, with the decision timeout
// on its context. Every store honours its context (the store contract requires
// it), so the call returns by the deadline; with the Redis store, given
// the client settings docs/redis.md recommends.
func (m *Middleware) decide(
	parent context.Context,
	key string,
	keys []string,
	algs []algorithms.Algorithm,
	cost int64,
) (decision, error) {
	ctx := parent
	if m.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, m.timeout)
		defer cancel()
	}
	d, err := m.run(ctx, key, keys, algs, cost)
	switch {
	case err == nil:
		return d, nil
	case ended(parent):
		// The request's own context ended, not the store.
		if err := parent.Err(); err != nil {
			return decision{}, err
		}
		return decision{}, context.DeadlineExceeded
	case ctx != parent && ended(ctx) && !errors.Is(err, store.ErrUnavailable):
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
		}
		return decision{}, fmt.Errorf("%w: no decision within %v: %w", store.ErrUnavailable, m.timeout, err)
	}
	// A store that gave up on the decision's deadline itself, with an
	// error of its own, timed out too.
	if ctx != parent && ended(ctx) && !errors.Is(err, context.DeadlineExceeded) {
		return decision{}, fmt.Errorf("%w (%w)", err, context.DeadlineExceeded)
	}
	return decision{}, err
}

// ended reports whether ctx is done or its deadline has passed: a socket
// deadline taken from ctx can fire a moment before ctx's own timer marks it
// done.
func ended(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// run asks the limiter, the Stack on key, or the MultiKey on keys.
func (m *Middleware) run(
	ctx context.Context,
	key string,
	keys []string,
	algs []algorithms.Algorithm,
	cost int64,
) (decision, error) {
	var sr ratewise.MultiResult
	var err error
	switch {
	case m.group != nil:
		sr, err = m.group.AllowN(ctx, keys, cost)
	case m.set != nil:
		sr, err = m.set.AllowN(ctx, key, cost)
	default:
		res, err := m.limiter.AllowWith(ctx, key, algs[0], cost)
		return decision{res: res, results: []ratewise.Result{res}}, err
	}
	if err != nil {
		return decision{}, err
	}
	// The binding limit's Result is the Stack's or the MultiKey's answer:
	// denied, it is the limit with the longest wait, their RetryAfter.
	return decision{res: sr.Results[sr.Binding], results: sr.Results, binding: sr.Binding}, nil
}

// storeFailure reports whether err is a failure of the store, which the
// policy handles: the store was unavailable, or the decision timeout passed
// (whether the store gave up on its own deadline or the middleware stopped
// waiting). A request whose own context ended is not one.
func (m *Middleware) storeFailure(r *http.Request, err error) bool {
	if errors.Is(err, store.ErrUnavailable) {
		return true
	}
	return m.timeout > 0 && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil
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
	w.Header().Set("Retry-After", fmt.Sprint(RetryAfterSeconds(res.RetryAfter)))
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
		if fc, ok := se.policy.(failClosed); ok {
			if fc.retryAfter > 0 {
				w.Header().Set("Retry-After", fmt.Sprint(RetryAfterSeconds(fc.retryAfter)))
			}
			http.Error(w, http.StatusText(fc.status), fc.status)
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
