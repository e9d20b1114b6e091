package ratewise_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

func Example() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 13, 59, 30, 0, time.UTC)) // the output is repeatable

	// 3 requests per minute per user, counted exactly over any minute.
	limiter, err := ratewise.New(storememory.New(),
		algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("api"), ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for range 4 {
		res, err := limiter.Allow(ctx, "user:1001")
		if err != nil {
			panic(err) // the store failed: do not treat it as allowed
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	clock.Advance(time.Minute)
	res, _ := limiter.Allow(ctx, "user:1001")
	fmt.Printf("a minute later: allowed=%v remaining=%d\n", res.Allowed, res.Remaining)
	// Output:
	// allowed=true remaining=2 retry-after=0s
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1m0s
	// a minute later: allowed=true remaining=2
}

// Free users get 3 requests per minute and paid users 10, on one limiter.
// The tiers share the sliding log's window, so a user who upgrades keeps
// what they used this minute.
func ExampleWithTiers() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	free := algorithms.SlidingLog{Limit: 3, Window: time.Minute}
	paid := algorithms.SlidingLog{Limit: 10, Window: time.Minute}
	plans := map[string]algorithms.Algorithm{"user:paid": paid}

	limiter, err := ratewise.New(storememory.New(), free, ratewise.WithClock(clock),
		ratewise.WithTiers(func(_ context.Context, user string) (algorithms.Algorithm, error) {
			return plans[user], nil // nil: the free tier
		}))
	if err != nil {
		panic(err)
	}
	for _, user := range []string{"user:free", "user:paid"} {
		var admitted int
		for range 12 {
			if res, err := limiter.Allow(ctx, user); err == nil && res.Allowed {
				admitted++
			}
		}
		fmt.Printf("%s: %d of 12 admitted\n", user, admitted)
	}
	plans["user:free"] = paid // an upgrade, read from configuration
	res, _ := limiter.PeekN(ctx, "user:free", 1)
	fmt.Printf("after upgrading: %d of %d left\n", res.Remaining, res.Limit)
	// Output:
	// user:free: 3 of 12 admitted
	// user:paid: 10 of 12 admitted
	// after upgrading: 7 of 10 left
}

// A call can also carry its own limit, chosen by the caller.
func ExampleLimiter_AllowWith() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	limiter, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	burst5 := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	res, _ := limiter.AllowWith(ctx, "job:42", burst5, 5)
	fmt.Println(res.Allowed, res.Remaining)
	// Output: true 0
}

// 10 per second with a burst of 20 AND 1,000 per hour, checked together: a
// request passes only if both admit it, and a denied one charges neither.
func ExampleNewStack() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20},
		algorithms.SlidingLog{Limit: 1000, Window: time.Hour},
	}, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	var admitted int
	for range 25 {
		if res, err := set.Allow(ctx, "user:1001"); err == nil && res.Allowed {
			admitted++
		}
	}
	res, _ := set.PeekN(ctx, "user:1001", 1)
	fmt.Printf("admitted %d of 25; the hourly limit has %d left\n", admitted, res.Results[1].Remaining)
	res, _ = set.Allow(ctx, "user:1001")
	fmt.Printf("next: allowed=%v, bound by limit %d, retry after %v\n", res.Allowed, res.Binding, res.RetryAfter)
	// Output:
	// admitted 20 of 25; the hourly limit has 980 left
	// next: allowed=false, bound by limit 0, retry after 100ms
}

// A plan sells 3 requests a month, reset on the 1st at midnight in the
// customer's zone: a request on the evening of January 31st in Berlin is
// told to come back at midnight, when February starts.
func Example_calendar() {
	ctx := context.Background()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	monthly := algorithms.CalendarWindow{Limit: 1_000_000, Period: "month", Location: berlin}
	plan := algorithms.CalendarWindow{Limit: 3, Period: monthly.Period, Location: monthly.Location}
	clock := ratewisetest.NewClock(time.Date(2027, 1, 31, 22, 30, 0, 0, berlin))
	limiter, err := ratewise.New(storememory.New(), plan, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for range 4 {
		res, err := limiter.Allow(ctx, "customer:42")
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	clock.Advance(90 * time.Minute) // 00:00 on February 1st in Berlin
	res, _ := limiter.Allow(ctx, "customer:42")
	fmt.Printf("in February: allowed=%v remaining=%d\n", res.Allowed, res.Remaining)
	// Output:
	// allowed=true remaining=2 retry-after=0s
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1h30m0s
	// in February: allowed=true remaining=2
}

// A worker calling a limited API waits its turn instead of failing: Wait
// blocks until the request is admitted, or fails at once when the wait would
// outlast the context's deadline. (The test clock moves instead of
// sleeping.)
func ExampleLimiter_Wait() {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	limiter, err := ratewise.New(storememory.New(),
		algorithms.GCRA{Rate: algorithms.PerSecond(2), Burst: 1}, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		if _, err := limiter.Wait(ctx, "api:partner"); err != nil {
			panic(err) // the deadline, or the store failed
		}
	}
	fmt.Println("3 calls at 2 per second; waited at least", clock.Now().Sub(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)).Truncate(time.Second))
	// Output: 3 calls at 2 per second; waited at least 1s
}

// A job is charged its largest cost up front and gives back what it did not
// use; a request that failed before doing any work gives back all of it.
func ExampleLimiter_Refund() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	limiter, err := ratewise.New(storememory.New(),
		algorithms.TokenBucket{Capacity: 100, Refill: algorithms.PerMinute(100)}, ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	res, err := limiter.AllowN(ctx, "export:acme", 50) // at most 50 rows
	if err != nil || !res.Allowed {
		return
	}
	rows := 12 // what the export used
	after, err := limiter.Refund(ctx, "export:acme", res, int64(50-rows))
	if err != nil {
		panic(err)
	}
	fmt.Println("charged 50, used", rows, "- remaining", after.Remaining)
	// Output: charged 50, used 12 - remaining 88
}

// A user's limit AND their tenant's limit, on different keys, which a
// Redis Cluster keeps in different slots: a MultiKey checks both, and a
// request one of them denies charges neither.
func ExampleMultiKey() {
	ctx := context.Background()
	s := storememory.New()
	perUser, err := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(5), Burst: 10}, ratewise.WithNamespace("user"))
	if err != nil {
		panic(err)
	}
	perTenant, err := ratewise.New(s, algorithms.SlidingLog{Limit: 3, Window: time.Minute}, ratewise.WithNamespace("tenant"))
	if err != nil {
		panic(err)
	}
	multi, err := ratewise.NewMultiKey(perUser, perTenant)
	if err != nil {
		panic(err)
	}
	for _, user := range []string{"ann", "bob", "cat", "dan"} {
		res, err := multi.AllowN(ctx, []string{user, "acme"}, 1) // a key per limiter, in order
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: allowed=%v\n", user, res.Allowed)
	}
	res, _ := perUser.PeekN(ctx, "dan", 1)
	fmt.Println("dan's own limit was not charged:", res.Remaining == 10)
	// Output:
	// ann: allowed=true
	// bob: allowed=true
	// cat: allowed=true
	// dan: allowed=false
	// dan's own limit was not charged: true
}

// A limit per user and a global one in front of an http.Handler: 100
// requests a minute per user and 1,000 a minute for everyone, each named
// in the RateLimit headers. A request one limit denies charges neither.
func ExampleMultiKey_http() {
	s := storememory.New()
	perUser, err := ratewise.New(s, algorithms.SlidingLog{Limit: 100, Window: time.Minute}, ratewise.WithNamespace("api.per-user"))
	if err != nil {
		panic(err)
	}
	global, err := ratewise.New(s, algorithms.CompactLog{Limit: 1000, Window: time.Minute}, ratewise.WithNamespace("api.global"))
	if err != nil {
		panic(err)
	}
	multi, err := ratewise.NewMultiKey(perUser, global)
	if err != nil {
		panic(err)
	}
	// Your authentication's user, here a stand-in header; false for an anonymous request.
	user := func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" }
	everyone := func(*http.Request) (string, error) { return "all", nil }
	mw, err := httplimit.NewMultiKey(multi, []httplimit.KeyFunc{httplimit.ByUser(user), everyone},
		httplimit.WithQuotaName("per-user", "global"), httplimit.WithNoKey(http.StatusUnauthorized))
	if err != nil {
		panic(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") }))

	r := httptest.NewRequest("GET", "/hello", nil)
	r.Header.Set("X-User", "alice")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println("RateLimit-Policy:", strings.Join(w.Header().Values("RateLimit-Policy"), ", "))
	fmt.Println("RateLimit:", w.Header().Get("RateLimit"))

	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/hello", nil)) // no X-User
	fmt.Println("anonymous:", w.Code)
	// Output:
	// RateLimit-Policy: "per-user";q=100;w=60, "global";q=1000;w=60
	// RateLimit: "per-user";r=99;t=60
	// anonymous: 401
}
