package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
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
