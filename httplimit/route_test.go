package httplimit

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// do sends method path from 192.0.2.1 to h, with the given headers.
func do(h http.Handler, method, path string, header ...string) *http.Response {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = "192.0.2.1:1000"
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// newRoute is m.Route, failing the test on an error.
func newRoute(t *testing.T, m *Middleware, name string, alg algorithms.Algorithm) *Middleware {
	t.Helper()
	r, err := m.Route(name, alg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Two routes and the rest of a mux, on one middleware: each is limited by
// its own algorithm, and its headers describe that algorithm's quota under
// the route's name.
func TestRoutes(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	m, err := New(newLimiter(t, algorithms.SlidingLog{Limit: 3, Window: time.Minute}, clock), WithLegacyHeaders())
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(
		"POST /login",
		newRoute(t, m, "login", algorithms.SlidingLog{Limit: 2, Window: 15 * time.Minute}).Handler(ok),
	)
	mux.Handle(
		"GET /search",
		newRoute(t, m, "search", algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 3}).Handler(ok),
	)
	mux.Handle("/", m.Handler(ok))
	for i, c := range []struct {
		method, path      string
		status            int
		policy, rateLimit string
		limit, retryAfter string
	}{
		{"POST", "/login", 200, `"login";q=2;w=900`, `"login";r=1;t=900`, "2", ""},
		{"POST", "/login", 200, `"login";q=2;w=900`, `"login";r=0;t=900`, "2", ""},
		{"POST", "/login", 429, `"login";q=2;w=900`, `"login";r=0;t=900`, "2", "900"},
		{"GET", "/search", 200, `"search";q=3;w=3`, `"search";r=2;t=1`, "3", ""},
		{"GET", "/search", 200, `"search";q=3;w=3`, `"search";r=1;t=2`, "3", ""},
		{"GET", "/", 200, `"default";q=3;w=60`, `"default";r=2;t=60`, "3", ""},
		{"GET", "/pay", 200, `"default";q=3;w=60`, `"default";r=1;t=60`, "3", ""},
		{"GET", "/search", 200, `"search";q=3;w=3`, `"search";r=0;t=3`, "3", ""},
		{"GET", "/search", 429, `"search";q=3;w=3`, `"search";r=0;t=3`, "3", "1"},
		{"GET", "/pay", 200, `"default";q=3;w=60`, `"default";r=0;t=60`, "3", ""},
		{"GET", "/", 429, `"default";q=3;w=60`, `"default";r=0;t=60`, "3", "60"},
	} {
		resp := do(mux, c.method, c.path)
		got := []string{
			strconv.Itoa(resp.StatusCode),
			resp.Header.Get("RateLimit-Policy"),
			resp.Header.Get("RateLimit"),
			resp.Header.Get("X-RateLimit-Limit"),
			resp.Header.Get("Retry-After"),
		}
		want := []string{strconv.Itoa(c.status), c.policy, c.rateLimit, c.limit, c.retryAfter}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf(
					"request %d, %s %s: status, RateLimit-Policy, RateLimit, X-RateLimit-Limit, Retry-After: got %q, want %q",
					i+1,
					c.method,
					c.path,
					got,
					want,
				)
			}
		}
	}
}

// Routes whose algorithms are equal to each other and to the limiter's
// still count against quotas of their own.
func TestRoutesDoNotShareQuotas(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	alg := algorithms.FixedWindow{Limit: 2, Window: time.Minute}
	m, err := New(newLimiter(t, alg, clock))
	if err != nil {
		t.Fatal(err)
	}
	handlers := map[string]http.Handler{
		"a":       newRoute(t, m, "a", alg).Handler(ok),
		"b":       newRoute(t, m, "b", alg).Handler(ok),
		"default": m.Handler(ok),
	}
	for _, name := range []string{"a", "b", "default"} {
		for i, want := range []int{200, 200, 429} {
			if resp := do(handlers[name], "GET", "/"); resp.StatusCode != want {
				t.Fatalf(
					"%s, request %d: status %d, want %d: another quota was spent on it",
					name,
					i+1,
					resp.StatusCode,
					want,
				)
			}
		}
	}
}

// recordingStore records the keys it decides on.
type recordingStore struct {
	store.Store
	mu   sync.Mutex
	keys []string
}

func (s *recordingStore) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	key := sk.String()
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Decide(ctx, store.Key{Name: key}, alg, now, cost)
}

// A route's keys are keypart.Pair("route", name), ':' and the KeyFunc's key, so a
// name cannot forge a label boundary.
func TestRouteKeys(t *testing.T) {
	s := &recordingStore{Store: storememory.New()}
	l, err := ratewise.New(s, algorithms.FixedWindow{Limit: 5, Window: time.Minute}, ratewise.WithNamespace("api"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	alg := algorithms.SlidingLog{Limit: 5, Window: time.Minute}
	for _, h := range []http.Handler{
		newRoute(t, m, "login", alg).Handler(ok),
		newRoute(t, m, "a:ip:b", alg).Handler(ok),
		m.Handler(ok),
	} {
		if resp := do(h, "GET", "/"); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	want := []string{"api:route:login:ip:192.0.2.1", "api:route:a%3Aip%3Ab:ip:192.0.2.1", "api:ip:192.0.2.1"}
	if len(s.keys) != len(want) {
		t.Fatalf("keys: got %q, want %q", s.keys, want)
	}
	for i := range want {
		if s.keys[i] != want[i] {
			t.Fatalf("keys: got %q, want %q", s.keys, want)
		}
	}
}

// A route shares its middleware's options: here the KeyFunc, the cost and
// the exemptions. The cost is checked against the route's limit.
func TestRouteSharesTheOptions(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	m, err := New(
		newLimiter(t, algorithms.SlidingLog{Limit: 10, Window: time.Minute}, clock),
		WithKey(
			ByUser(
				func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" },
			),
		),
		WithCost(func(r *http.Request) (int64, error) { return strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64) }),
		WithExempt(func(r *http.Request) bool { return r.Header.Get("X-Internal") != "" }),
	)
	if err != nil {
		t.Fatal(err)
	}
	upload := newRoute(t, m, "upload", algorithms.SlidingLog{Limit: 2, Window: time.Minute}).Handler(ok)
	for i, c := range []struct {
		header    []string
		status    int
		rateLimit string
	}{
		{[]string{"X-User", "alice", "X-Cost", "2"}, 200, `"upload";r=0;t=60`},
		{[]string{"X-User", "bob", "X-Cost", "1"}, 200, `"upload";r=1;t=60`}, // keyed by user, not by IP
		{[]string{"X-User", "alice", "X-Cost", "1"}, 429, `"upload";r=0;t=60`},
		{[]string{"X-User", "alice", "X-Cost", "1", "X-Internal", "1"}, 200, ""}, // exempt
		{[]string{"X-User", "carol", "X-Cost", "3"}, 413, ""},                    // above the route's limit of 2
		{[]string{"X-Cost", "1"}, 500, ""},                                       // no user: no key
	} {
		resp := do(upload, "POST", "/upload", c.header...)
		if resp.StatusCode != c.status || resp.Header.Get("RateLimit") != c.rateLimit {
			t.Fatalf(
				"request %d %q: %d, RateLimit %q; want %d, %q",
				i+1,
				c.header,
				resp.StatusCode,
				resp.Header.Get("RateLimit"),
				c.status,
				c.rateLimit,
			)
		}
	}
}

// Route refuses what it cannot limit, with an error wrapping ratewise.ErrInvalidConfig, and
// one name keeps one algorithm.
func TestRouteRejectsBadInput(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	alg := algorithms.SlidingLog{Limit: 5, Window: time.Minute}
	m, err := New(newLimiter(t, alg, clock))
	if err != nil {
		t.Fatal(err)
	}
	login := newRoute(t, m, "login", alg)
	if again := newRoute(t, m, "login", alg); again != login {
		t.Fatal("Route with a name and algorithm it was given already: a new middleware, want the same")
	}
	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{alg}, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	setMiddleware, err := NewStack(set)
	if err != nil {
		t.Fatal(err)
	}
	fallbackMiddleware, err := New(newLimiter(t, alg, clock), WithFailureMode(Fallback(newLimiter(t, alg, clock))))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		m     *Middleware
		route string
		alg   algorithms.Algorithm
		want  error // besides ratewise.ErrInvalidConfig
	}{
		{"empty name", m, "", alg, nil},
		{"name not printable ASCII", m, "log\nin", alg, nil},
		{"nil algorithm", m, "search", nil, algorithms.ErrInvalidAlgorithm},
		{"invalid algorithm", m, "search", algorithms.SlidingLog{Limit: 0, Window: time.Minute},
			algorithms.ErrInvalidAlgorithm},
		{"algorithm by pointer", m, "search", &algorithms.SlidingLog{Limit: 5, Window: time.Minute},
			algorithms.ErrInvalidAlgorithm},
		{"a name with another algorithm", m, "login", algorithms.SlidingLog{Limit: 6, Window: time.Minute}, nil},
		{"a route of a route", login, "search", alg, nil},
		{"a Stack", setMiddleware, "search", alg, nil},
		{"Fallback", fallbackMiddleware, "search", alg, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := c.m.Route(c.route, c.alg)
			if !errors.Is(err, ratewise.ErrInvalidConfig) || r != nil {
				t.Fatalf(
					"Route(%q, %v): got %v, %v; want an error wrapping ratewise.ErrInvalidConfig",
					c.route,
					c.alg,
					r,
					err,
				)
			}
			if c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Route(%q, %v): got %v, want an error wrapping %v", c.route, c.alg, err, c.want)
			}
		})
	}
	// The refused algorithms did not take the name.
	newRoute(t, m, "search", alg)
}
