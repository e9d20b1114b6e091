package httplimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })

var testAlgorithms = []algorithms.Algorithm{
	algorithms.FixedWindow{Limit: 5, Window: time.Minute},
	algorithms.SlidingLog{Limit: 5, Window: time.Minute},
	algorithms.SlidingWindow{Limit: 5, Window: time.Minute, SubWindows: 6},
	algorithms.TokenBucket{Capacity: 5, Refill: algorithms.Rate{Count: 5, Period: 10 * time.Second}},
	algorithms.GCRA{Rate: algorithms.Rate{Count: 3, Period: 6 * time.Second}, Burst: 5},
}

func newLimiter(t *testing.T, alg algorithms.Algorithm, clock *ratewisetest.Clock) *ratewise.Limiter {
	t.Helper()
	l, err := ratewise.New(storememory.New(), alg, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func serve(h http.Handler, remote string) *http.Response {
	r := httptest.NewRequest("GET", "/pay", nil)
	r.RemoteAddr = remote
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// Every response's headers match the decision the algorithm makes on a
// model of the key's state, request by request, until and after denial.
func TestHeadersAreExact(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
			m, err := New(newLimiter(t, alg, clock), WithLegacyHeaders())
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(ok)
			var model algo.State
			denied := 0
			for i := 0; denied < 3; i++ {
				clock.Advance(700 * time.Millisecond)
				var want algorithms.Result
				model, want = algo.Decide(alg, model, clock.Now(), 1)
				resp := serve(h, "192.0.2.1:1000")
				wantStatus := http.StatusOK
				if !want.Allowed {
					wantStatus = http.StatusTooManyRequests
					denied++
				}
				if resp.StatusCode != wantStatus {
					t.Fatalf("request %d: status %d, want %d", i, resp.StatusCode, wantStatus)
				}
				// The quota's window: 5 per minute; 5 tokens at 5 per 10s,
				// 5 requests at 3 per 6s: 10s.
				w := map[string]int64{"token_bucket": 10, "gcra": 10}[alg.Kind().String()]
				if w == 0 {
					w = 60
				}
				wantHeaders := map[string]string{
					"RateLimit-Policy": fmt.Sprintf(`"default";q=%d;w=%d`, want.Limit, w),
					"RateLimit": fmt.Sprintf(
						`"default";r=%d;t=%d`,
						want.Remaining,
						ratelimitheader.CeilSeconds(want.ResetAfter),
					),
					"X-RateLimit-Limit":     strconv.FormatInt(want.Limit, 10),
					"X-RateLimit-Remaining": strconv.FormatInt(want.Remaining, 10),
					"X-RateLimit-Reset":     strconv.FormatInt(ratelimitheader.CeilSeconds(want.ResetAfter), 10),
				}
				if !want.Allowed {
					wantHeaders["Retry-After"] = strconv.FormatInt(RetryAfterSeconds(want.RetryAfter), 10)
				}
				for k, v := range wantHeaders {
					if got := resp.Header.Get(k); got != v {
						t.Fatalf("request %d: %s: got %q, want %q (result %+v)", i, k, got, v, want)
					}
				}
				if want.Allowed && resp.Header.Get("Retry-After") != "" {
					t.Fatalf("request %d: admitted with Retry-After %q", i, resp.Header.Get("Retry-After"))
				}
			}
		})
	}
}

// A client that waits exactly Retry-After is admitted, and Retry-After is
// never 0 when denied.
func TestRetryAfterIsHonest(t *testing.T) {
	for _, alg := range testAlgorithms {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
			m, _ := New(newLimiter(t, alg, clock))
			h := m.Handler(ok)
			waits := 0
			for i := 0; waits < 5 && i < 100; i++ {
				clock.Advance(123 * time.Millisecond)
				resp := serve(h, "192.0.2.1:1000")
				if resp.StatusCode == http.StatusOK {
					continue
				}
				secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
				if err != nil || secs < 1 {
					t.Fatalf("denied with Retry-After %q", resp.Header.Get("Retry-After"))
				}
				clock.Advance(time.Duration(secs) * time.Second)
				if resp := serve(h, "192.0.2.1:1000"); resp.StatusCode != http.StatusOK {
					t.Fatalf("waited Retry-After %ds and was denied again", secs)
				}
				waits++
			}
			if waits < 5 {
				t.Fatalf("only %d denials to test", waits)
			}
		})
	}
}

func TestDeniedResponse(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	l := newLimiter(t, algorithms.FixedWindow{Limit: 1, Window: time.Minute}, clock)
	m, _ := New(l, WithDeniedHandler(func(w http.ResponseWriter, _ *http.Request, res ratewise.Result) {
		w.Header().Set("Retry-After", fmt.Sprint(RetryAfterSeconds(res.RetryAfter)))
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, "slow down\n")
	}))
	h := m.Handler(ok)
	serve(h, "192.0.2.1:1")
	resp := serve(h, "192.0.2.1:1")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 429 || string(body) != "slow down\n" || resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("denied: %d %q Retry-After %q", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	// Another client has its own quota.
	if resp := serve(h, "192.0.2.2:1"); resp.StatusCode != 200 {
		t.Fatalf("another IP: %d", resp.StatusCode)
	}

	custom, _ := New(l, WithDeniedHandler(func(w http.ResponseWriter, r *http.Request, res ratewise.Result) {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "retry in %v", res.RetryAfter)
	}))
	resp = serve(custom.Handler(ok), "192.0.2.1:1")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTeapot || string(body) != "retry in 1m0s" || resp.Header.Get("RateLimit") == "" {
		t.Fatalf("custom denial: %d %q, RateLimit %q", resp.StatusCode, body, resp.Header.Get("RateLimit"))
	}
}

func TestCostPerRequest(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	l := newLimiter(t, algorithms.SlidingLog{Limit: 10, Window: time.Minute}, clock)
	m, _ := New(l, WithCost(func(r *http.Request) (int64, error) {
		return strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64)
	}))
	h := m.Handler(ok)
	send := func(cost string) *http.Response {
		r := httptest.NewRequest("POST", "/upload", nil)
		r.Header.Set("X-Cost", cost)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	for _, c := range []struct {
		cost      string
		status    int
		remaining string
	}{
		{"4", 200, `"default";r=6;t=60`},
		{"6", 200, `"default";r=0;t=60`},
		{"1", 429, `"default";r=0;t=60`},
		{"11", 413, ""}, // more than the limit: never admissible
		{"x", 500, ""},  // the cost function failed
	} {
		resp := send(c.cost)
		if resp.StatusCode != c.status || resp.Header.Get("RateLimit") != c.remaining {
			t.Fatalf(
				"cost %s: %d %q, want %d %q",
				c.cost,
				resp.StatusCode,
				resp.Header.Get("RateLimit"),
				c.status,
				c.remaining,
			)
		}
	}
}

func TestAnonymousUserFails(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	m, _ := New(
		newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock),
		WithKey(
			ByUser(
				func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" },
			),
		),
	)
	var failure error
	m2, _ := New(
		newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock),
		WithKey(ByUser(func(r *http.Request) (string, bool) { return "", false })),
		WithFailureHandler(
			func(w http.ResponseWriter, r *http.Request, err error) { failure = err; w.WriteHeader(401) },
		),
	)
	if resp := serve(m.Handler(ok), "192.0.2.1:1"); resp.StatusCode != 500 {
		t.Fatalf("anonymous request: %d, want 500", resp.StatusCode)
	}
	if resp := serve(m2.Handler(ok), "192.0.2.1:1"); resp.StatusCode != 401 || failure == nil {
		t.Fatalf("custom failure handler: %d, %v", resp.StatusCode, failure)
	}
}

func TestPolicyHeaderLeavesOutFractionalWindows(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	m, _ := New(
		newLimiter(t, algorithms.GCRA{Rate: algorithms.Rate{Count: 3, Period: time.Second}, Burst: 2}, clock),
		WithQuotaName("api"),
	)
	resp := serve(m.Handler(ok), "192.0.2.1:1")
	// A burst of 2 at 3 per second refills in 666.666ms: no whole w.
	if got, want := resp.Header.Get("RateLimit-Policy"), `"api";q=2`; got != want {
		t.Fatalf("RateLimit-Policy: got %q, want %q", got, want)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	l := newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, ratewisetest.NewClock(time.Time{}))
	other := newLimiter(t, algorithms.SlidingLog{Limit: 1, Window: time.Second}, ratewisetest.NewClock(time.Time{}))
	for name, opt := range map[string]Option{
		"nil key":            WithKey(nil),
		"nil hook":           WithOnError(nil),
		"negative timeout":   WithTimeout(-time.Second),
		"fail-closed 500":    WithFailureMode(FailClosed(500, 0)),
		"429 without wait":   WithFailureMode(FailClosed(429, 0)),
		"fallback nil":       WithFailureMode(Fallback(nil)),
		"fallback other alg": WithFailureMode(Fallback(other)),
		"quota name":         WithQuotaName("a\"\n"),
		"nil cost":           WithCost(nil),
		"nil denied handler": WithDeniedHandler(nil),
		"nil failure":        WithFailureHandler(nil),
		"nil mode":           WithFailureMode(nil),
		"nil exempt":         WithExempt(nil),
		"nil dry run":        WithDryRun(nil),
		"nil observer":       WithObserver(nil),
	} {
		if _, err := New(l, opt); !errors.Is(err, ratewise.ErrInvalidConfig) {
			t.Errorf("%s: New: got %v, want ratewise.ErrInvalidConfig", name, err)
		}
	}
	if _, err := New(nil); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Errorf("nil limiter: got %v, want ratewise.ErrInvalidConfig", err)
	}
	if _, err := NewStack(nil); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Errorf("nil Stack: got %v, want ratewise.ErrInvalidConfig", err)
	}
}

func TestShare(t *testing.T) {
	cases := []struct {
		in, want algorithms.Algorithm
	}{
		{
			algorithms.FixedWindow{Limit: 100, Window: time.Minute},
			algorithms.FixedWindow{Limit: 25, Window: time.Minute},
		},
		{algorithms.SlidingLog{Limit: 10, Window: time.Second}, algorithms.SlidingLog{Limit: 2, Window: time.Second}},
		{
			algorithms.SlidingWindow{Limit: 9, Window: time.Minute, SubWindows: 6},
			algorithms.SlidingWindow{Limit: 2, Window: time.Minute, SubWindows: 6},
		},
		{
			algorithms.TokenBucket{Capacity: 40, Refill: algorithms.PerSecond(10)},
			algorithms.TokenBucket{Capacity: 10, Refill: algorithms.Rate{Count: 10, Period: 4 * time.Second}},
		},
		{
			algorithms.GCRA{Rate: algorithms.PerMinute(100), Burst: 8},
			algorithms.GCRA{Rate: algorithms.Rate{Count: 100, Period: 4 * time.Minute}, Burst: 2},
		},
	}
	for _, c := range cases {
		got, err := Share(c.in, 4)
		if err != nil || got != c.want {
			t.Errorf("Share(%+v, 4): got %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []struct {
		alg       algorithms.Algorithm
		instances int64
		want      error
	}{
		{algorithms.FixedWindow{Limit: 3, Window: time.Second}, 4, algorithms.ErrInvalidAlgorithm},
		{algorithms.FixedWindow{Limit: 3, Window: time.Second}, 0, ratewise.ErrInvalidConfig},
		// The period becomes 2^51µs.
		{algorithms.GCRA{Rate: algorithms.Rate{Count: 2, Period: 1 << 49 * time.Microsecond}, Burst: 4},
			4, algorithms.ErrInvalidAlgorithm},
		{nil, 2, algorithms.ErrInvalidAlgorithm},
		{&algorithms.SlidingLog{Limit: 10, Window: time.Second}, 2, algorithms.ErrInvalidAlgorithm},
	} {
		if got, err := Share(bad.alg, bad.instances); !errors.Is(err, bad.want) || got != nil {
			t.Errorf("Share(%v, %d) = %v, %v; want %v", bad.alg, bad.instances, got, err, bad.want)
		}
	}
}

// TestContextIsPassedToTheStore: a request whose own context has ended is
// not a store failure: it is a 500 the hook hears with the context's error,
// never the failure mode's answer, whichever of the store and the timeout
// answers first.
func TestContextIsPassedToTheStore(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	h := &hook{}
	m, _ := New(newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock),
		WithOnError(h.record), WithFailureMode(FailOpen()))
	for i := range 500 {
		r := httptest.NewRequest("GET", "/", nil)
		ctx, cancel := context.WithCancel(r.Context())
		cancel()
		w := httptest.NewRecorder()
		m.Handler(ok).ServeHTTP(w, r.WithContext(ctx))
		if w.Code != http.StatusInternalServerError {
			t.Fatalf("cancelled request %d: %d, want 500", i, w.Code)
		}
		if h.count() != i+1 || !errors.Is(h.errs[i], context.Canceled) || errors.Is(h.errs[i], store.ErrUnavailable) {
			t.Fatalf("cancelled request %d: the hook heard %v, want context.Canceled", i, h.errs)
		}
	}
}

// A key's own limit (ratewise.WithTiers) is what its headers describe:
// the paid user's quota is 50 per hour, the others' 5 per minute.
func TestHeadersFollowTheKeysLimit(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	paid := algorithms.FixedWindow{Limit: 50, Window: time.Hour}
	l, err := ratewise.New(
		storememory.New(),
		algorithms.FixedWindow{Limit: 5, Window: time.Minute},
		ratewise.WithClock(clock),
		ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
			if strings.HasSuffix(key, "paid") {
				return paid, nil
			}
			return nil, nil
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(l, WithKey(ByUser(func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), true })))
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for user, want := range map[string]string{"paid": `"default";q=50;w=3600`, "free": `"default";q=5;w=60`} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-User", user)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Result().Header.Get("RateLimit-Policy"); got != want {
			t.Errorf("%s: RateLimit-Policy %q, want %q", user, got, want)
		}
	}
}

// A request without a key gets the answer WithNoKey sets, which the OnError
// hook does not hear of; without WithNoKey it fails, and the hook hears of
// it.
func TestNoKeyAnswers(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	anonymous := WithKey(ByUser(func(*http.Request) (string, bool) { return "", false }))
	for _, c := range []struct {
		opt    Option
		status int
		heard  int
	}{
		{WithNoKey(http.StatusUnauthorized), http.StatusUnauthorized, 0},
		{WithNoKey(NoKeyUnlimited), http.StatusOK, 0},
		{WithTimeout(defaultTimeout), http.StatusInternalServerError, 3}, // the default: the failure handler
	} {
		var heard []error
		m, err := New(newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock), anonymous, c.opt,
			WithOnError(func(_ *http.Request, err error) { heard = append(heard, err) }))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 { // unlimited: never counted, so never denied
			if resp := serve(m.Handler(ok), "192.0.2.1:1"); resp.StatusCode != c.status ||
				resp.Header.Get("RateLimit") != "" {
				t.Fatalf("want %d: got %d, RateLimit %q", c.status, resp.StatusCode, resp.Header.Get("RateLimit"))
			}
		}
		if len(heard) != c.heard || c.heard > 0 && !errors.Is(heard[0], ErrNoKey) {
			t.Fatalf("want %d: the hook heard %v, want %d errors matching ErrNoKey", c.status, heard, c.heard)
		}
	}
	if _, err := New(
		newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock), WithNoKey(http.StatusOK),
	); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Fatalf("WithNoKey(200): got %v, want ratewise.ErrInvalidConfig", err)
	}
}

// Exempt requests pass without being counted or described; the others are
// limited as usual.
func TestExempt(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	m, err := New(newLimiter(t, algorithms.FixedWindow{Limit: 1, Window: time.Minute}, clock),
		WithExempt(func(r *http.Request) bool { return r.URL.Path == "/healthz" }))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *http.Response {
		r := httptest.NewRequest("GET", path, nil)
		r.RemoteAddr = "192.0.2.1:1"
		w := httptest.NewRecorder()
		m.Handler(ok).ServeHTTP(w, r)
		return w.Result()
	}
	for range 3 {
		if resp := get("/healthz"); resp.StatusCode != http.StatusOK || resp.Header.Get("RateLimit") != "" {
			t.Fatalf("health check: %d, RateLimit %q", resp.StatusCode, resp.Header.Get("RateLimit"))
		}
	}
	if resp := get("/pay"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d", resp.StatusCode)
	}
	if resp := get("/pay"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second request: %d, want 429", resp.StatusCode)
	}
}

// Dry-run mode counts and describes every request and denies none: the hook
// hears of exactly the requests that would have been denied.
func TestDryRun(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	var wouldDeny []ratewise.Result
	m, err := New(newLimiter(t, algorithms.FixedWindow{Limit: 2, Window: time.Minute}, clock),
		WithDryRun(func(_ *http.Request, res ratewise.Result) { wouldDeny = append(wouldDeny, res) }))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		resp := serve(m.Handler(ok), "192.0.2.1:1")
		remaining := max(0, 1-i)
		if resp.StatusCode != http.StatusOK ||
			resp.Header.Get("RateLimit") != fmt.Sprintf(`"default";r=%d;t=60`, remaining) ||
			resp.Header.Get("Retry-After") != "" {
			t.Fatalf(
				"request %d: %d, RateLimit %q, Retry-After %q",
				i+1,
				resp.StatusCode,
				resp.Header.Get("RateLimit"),
				resp.Header.Get("Retry-After"),
			)
		}
	}
	if len(wouldDeny) != 3 || wouldDeny[0].Allowed || wouldDeny[0].RetryAfter != time.Minute {
		t.Fatalf("the dry-run hook heard %+v, want the 3 requests over the limit", wouldDeny)
	}
}

// A Stack on a route: a request passes only if every limit admits it;
// RateLimit-Policy lists every limit and RateLimit reports the binding one.
func TestStackMiddleware(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
		algorithms.SlidingLog{Limit: 3, Window: time.Hour},
	}, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewStack(set)
	if err != nil {
		t.Fatal(err)
	}
	policies := `"default-1";q=2;w=2, "default-2";q=3;w=3600`
	for i, want := range []struct {
		advance    time.Duration
		status     int
		rateLimit  string
		retryAfter string
	}{
		{0, 200, `"default-1";r=1;t=1`, ""},
		{0, 200, `"default-1";r=0;t=2`, ""},
		{0, 429, `"default-1";r=0;t=2`, "1"}, // the GCRA binds; the log is not charged
		{time.Second, 200, `"default-1";r=0;t=2`, ""},
		{2 * time.Second, 429, `"default-2";r=0;t=3598`, "3597"}, // now the hourly log binds
	} {
		clock.Advance(want.advance)
		resp := serve(m.Handler(ok), "192.0.2.1:1")
		got := strings.Join(resp.Header.Values("RateLimit-Policy"), ", ")
		if resp.StatusCode != want.status || got != policies || resp.Header.Get("RateLimit") != want.rateLimit ||
			resp.Header.Get("Retry-After") != want.retryAfter {
			t.Fatalf(
				"request %d: %d, RateLimit-Policy %q, RateLimit %q, Retry-After %q; want %d, %q, %q",
				i+1,
				resp.StatusCode,
				got,
				resp.Header.Get("RateLimit"),
				resp.Header.Get("Retry-After"),
				want.status,
				want.rateLimit,
				want.retryAfter,
			)
		}
	}
	if _, err := NewStack(
		set, WithFailureMode(Fallback(newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock))),
	); err == nil {
		t.Fatal("NewStack with Fallback: no error")
	}
	// A Stack's failure mode is checked as a Limiter's is.
	for _, p := range []FailureMode{FailClosed(500, 0), FailClosed(429, 0), FailClosed(503, -time.Second)} {
		if _, err := NewStack(set, WithFailureMode(p)); err == nil {
			t.Errorf("NewStack with %+v: no error", p)
		}
	}
}
