package httplimit

import (
	"fmt"
	"sync"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/failmode"
	"github.com/ratewise/ratewise/internal/keypart"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

// routeTable is the routes a middleware from New has handed out, by name,
// so that one name keeps one algorithm.
type routeTable struct {
	mu     sync.Mutex
	byName map[string]*Middleware // requires mu held
}

// Route returns a middleware for one route that limits with alg instead of
// the limiter's algorithm and shares every other option of m: the KeyFunc,
// cost, failure mode, timeout, hooks, handlers, headers, dry run and
// exemptions. For example, 5 login attempts per 15 minutes and a burst of
// 40 searches at 20 a second per client, and the limiter's own limit for
// the rest:
//
//	login, err := mw.Route("login", algorithms.SlidingLog{Limit: 5, Window: 15 * time.Minute})
//	...
//	search, err := mw.Route("search", algorithms.GCRA{Rate: algorithms.PerSecond(20), Burst: 40})
//	...
//	mux.Handle("POST /login", login.Handler(loginHandler))
//	mux.Handle("GET /search", search.Handler(searchHandler))
//	mux.Handle("/", mw.Handler(rest))
//
// A route's quotas are its own: its keys are "route:", the name escaped as
// ByValue escapes values, ':' and the KeyFunc's key, such as "route:login:ip:192.0.2.1", so that no two
// routes, and no route and m, count against one quota, even when their
// algorithms share a kind and Scope. Its RateLimit-Policy and RateLimit
// fields describe alg's quota under the route's name instead of
// WithQuotaName's: "login";q=5;w=900. The limiter's WithTiers does not
// apply to a route.
//
// Route given a name again returns the same middleware if alg is the same,
// and fails otherwise, since both limits would count against one set of
// keys. Every error wraps ratewise.ErrInvalidConfig: a name that is empty
// or not printable ASCII (it names the quota in the headers); an algorithm
// ratewise.New refuses on any store, with New's error too, which wraps
// algorithms.ErrInvalidAlgorithm; m from NewStack or NewMultiKey, whose limits
// are fixed, or from Route; and a Fallback failure mode, whose local
// limiter holds a share of the limiter's algorithm and none of alg's: give
// such a route a Limiter and a Middleware of its own. An algorithm the store cannot run shows only
// on a request, which is answered 500 and reported to the OnError hook
// with store.ErrUnsupported, as under WithTiers.
func (m *Middleware) Route(name string, alg algorithms.Algorithm) (*Middleware, error) {
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: a route's name must not be empty", ratewise.ErrInvalidConfig)
	case ratelimitheader.CheckName(name) != nil:
		return nil, fmt.Errorf("%w: route %q: the name must be printable ASCII", ratewise.ErrInvalidConfig, name)
	case m.decider.Stack != nil || m.decider.Multi != nil:
		return nil, fmt.Errorf(
			"%w: route %q: a Stack's or a MultiKey's limits are fixed; a route needs a middleware from New",
			ratewise.ErrInvalidConfig,
			name,
		)
	case m.decider.Route != nil:
		return nil, fmt.Errorf(
			"%w: route %q: %q is a route already; call Route on the middleware New returned",
			ratewise.ErrInvalidConfig,
			name,
			m.quota,
		)
	case m.routes == nil:
		return nil, fmt.Errorf("%w: route %q: a route needs a middleware from New", ratewise.ErrInvalidConfig, name)
	}
	if m.decider.Mode.Name() == failmode.FallbackName {
		return nil, fmt.Errorf(
			"%w: route %q: the Fallback limiter holds a share of the limiter's algorithm, not of the route's; give the route "+
				"a Limiter and a Middleware of its own",
			ratewise.ErrInvalidConfig,
			name,
		)
	}
	if err := checkAlgorithm(alg); err != nil {
		return nil, fmt.Errorf("%w: route %q: %w", ratewise.ErrInvalidConfig, name, err)
	}
	m.routes.mu.Lock()
	defer m.routes.mu.Unlock()
	if r, ok := m.routes.byName[name]; ok {
		if !sameAlgorithm(r.decider.Route, alg) {
			return nil, fmt.Errorf(
				"%w: route %q: the route limits with %v already, not %v",
				ratewise.ErrInvalidConfig,
				name,
				r.decider.Route,
				alg,
			)
		}
		return r, nil
	}
	// Every option is set by New and never changes, so the copy shares
	// them. The default denied and failure handlers are m's methods; they
	// read only options the copy shares.
	r := *m
	r.names, r.quota = []string{name}, name
	r.quotas, _ = ratelimitheader.Names(r.names, 1) // the name passed CheckName
	r.decider.Route = alg
	r.routeKey = keypart.Pair("route", name) + ":"
	m.routes.byName[name] = &r
	return &r, nil
}

// checkAlgorithm checks alg as ratewise.Limiter.AllowWith does, with the
// same errors: one of package algorithms' types, with valid parameters.
func checkAlgorithm(alg algorithms.Algorithm) error {
	if alg == nil {
		return fmt.Errorf("%w: the algorithm is nil", algorithms.ErrInvalidAlgorithm)
	}
	if err := algo.CheckKind(alg); err != nil {
		return err
	}
	return alg.Validate()
}

// sameAlgorithm reports whether a and b, which pass CheckKind, are one
// algorithm with one set of parameters.
func sameAlgorithm(a, b algorithms.Algorithm) bool {
	return a.Kind() == b.Kind() && algo.ParamsOf(a) == algo.ParamsOf(b)
}
