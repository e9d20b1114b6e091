package ratewisetest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// A handler limited to 2 requests per minute per user answers the third
// with a 429, and admits again once the clock has moved by the Retry-After
// it announced: the test advances the clock instead of sleeping a minute.
func ExampleClock() {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	limiter, err := ratewise.New(storememory.New(),
		algorithms.SlidingLog{Limit: 2, Window: time.Minute}, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.New(limiter, httplimit.WithKey(httplimit.ByUser(
		func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), true })))
	if err != nil {
		panic(err)
	}
	handler := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))

	get := func() *http.Response {
		r := httptest.NewRequest("GET", "/orders", nil)
		r.Header.Set("X-User", "alice")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Result()
	}
	for range 3 {
		resp := get()
		fmt.Print(resp.StatusCode)
		if wait := resp.Header.Get("Retry-After"); wait != "" {
			fmt.Print(" Retry-After: ", wait)
		}
		fmt.Println()
	}
	clock.Advance(time.Minute)
	fmt.Println(get().StatusCode)
	// Output:
	// 200
	// 200
	// 429 Retry-After: 60
	// 200
}
