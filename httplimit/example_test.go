package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/storememory"
)

func ExampleNew() {
	// 3 requests a minute per user, or per client IP for anonymous
	// requests. In production the store is usually storeredis.
	limiter, err := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("api.per-user"))
	if err != nil {
		panic(err)
	}
	user := func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" }
	byIP, err := httplimit.ByIP(httplimit.IPConfig{TrustedProxies: []string{"10.0.0.0/8"}})
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.New(limiter, httplimit.WithKey(httplimit.FirstOf(httplimit.ByUser(user), byIP)))
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))

	for range 4 {
		r := httptest.NewRequest("GET", "/hello", nil)
		r.Header.Set("X-User", "alice")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 RateLimit: "default";r=2;t=60 Retry-After: ""
	// 200 RateLimit: "default";r=1;t=60 Retry-After: ""
	// 200 RateLimit: "default";r=0;t=60 Retry-After: ""
	// 429 RateLimit: "default";r=0;t=60 Retry-After: "60"
}

func ExampleMiddleware_Route() {
	// 3 requests a minute per client IP, but 2 login attempts per 15
	// minutes and a burst of 40 searches at 20 a second, each route with
	// quotas of its own.
	limiter, err := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("api"))
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.New(limiter)
	if err != nil {
		panic(err)
	}
	login, err := mw.Route("login", algorithms.SlidingLog{Limit: 2, Window: 15 * time.Minute})
	if err != nil {
		panic(err)
	}
	search, err := mw.Route("search", algorithms.GCRA{Rate: algorithms.PerSecond(20), Burst: 40})
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mux := http.NewServeMux()
	mux.Handle("POST /login", login.Handler(hello))
	mux.Handle("GET /search", search.Handler(hello))
	mux.Handle("/", mw.Handler(hello)) // the limiter's own limit

	for _, req := range []string{"POST /login", "POST /login", "POST /login", "GET /search", "GET /hello"} {
		method, path, _ := strings.Cut(req, " ")
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		fmt.Printf(
			"%-11s %d RateLimit-Policy: %s RateLimit: %s\n",
			req,
			w.Code,
			w.Header().Get("RateLimit-Policy"),
			w.Header().Get("RateLimit"),
		)
	}
	// Output:
	// POST /login 200 RateLimit-Policy: "login";q=2;w=900 RateLimit: "login";r=1;t=900
	// POST /login 200 RateLimit-Policy: "login";q=2;w=900 RateLimit: "login";r=0;t=900
	// POST /login 429 RateLimit-Policy: "login";q=2;w=900 RateLimit: "login";r=0;t=900
	// GET /search 200 RateLimit-Policy: "search";q=40;w=2 RateLimit: "search";r=39;t=1
	// GET /hello  200 RateLimit-Policy: "default";q=3;w=60 RateLimit: "default";r=2;t=60
}

func ExampleNewMultiKey() {
	// 2 requests a minute per user, and 3 a minute for everyone together.
	// Each limiter has a namespace of its own.
	s := storememory.New()
	perUser, err := ratewise.New(
		s,
		algorithms.SlidingLog{Limit: 2, Window: time.Minute},
		ratewise.WithNamespace("api.per-user"),
	)
	if err != nil {
		panic(err)
	}
	global, err := ratewise.New(
		s,
		algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("api.global"),
	)
	if err != nil {
		panic(err)
	}
	multi, err := ratewise.NewMultiKey(perUser, global)
	if err != nil {
		panic(err)
	}
	// A key for each limiter, in the MultiKey's order: the user's, and one
	// for every request; and a name for each in the RateLimit fields.
	user := func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" }
	everyone := func(*http.Request) (string, error) { return "all", nil }
	mw, err := httplimit.NewMultiKey(multi, []httplimit.KeyFunc{httplimit.ByUser(user), everyone},
		httplimit.WithQuotaName("per-user", "global"), httplimit.WithNoKey(http.StatusUnauthorized))
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))

	// Alice's third request is over her own limit and takes nothing from
	// the global one, so bob still gets in; then the global limit is
	// spent and carol, with her own quota untouched, waits for it.
	for i, name := range []string{"alice", "alice", "alice", "bob", "carol"} {
		r := httptest.NewRequest("GET", "/hello", nil)
		r.Header.Set("X-User", name)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if i == 0 {
			fmt.Printf("RateLimit-Policy: %s\n", strings.Join(w.Header().Values("RateLimit-Policy"), ", "))
		}
		fmt.Printf(
			"%-5s %d RateLimit: %s Retry-After: %q\n",
			name,
			w.Code,
			w.Header().Get("RateLimit"),
			w.Header().Get("Retry-After"),
		)
	}
	// Output:
	// RateLimit-Policy: "per-user";q=2;w=60, "global";q=3;w=60
	// alice 200 RateLimit: "per-user";r=1;t=60 Retry-After: ""
	// alice 200 RateLimit: "per-user";r=0;t=60 Retry-After: ""
	// alice 429 RateLimit: "per-user";r=0;t=60 Retry-After: "60"
	// bob   200 RateLimit: "global";r=0;t=60 Retry-After: ""
	// carol 429 RateLimit: "global";r=0;t=60 Retry-After: "60"
}
