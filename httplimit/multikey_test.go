package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/keypart"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// The group of these tests: 2 requests a minute per user, and 4 an hour
// for everyone together.
var (
	perUserAlg = algorithms.SlidingLog{Limit: 2, Window: time.Minute}
	globalAlg  = algorithms.SlidingLog{Limit: 4, Window: time.Hour}
)

// byUser keys a request by its X-User header; a request without one has
// no key.
var byUser = ByUser(
	func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), r.Header.Get("X-User") != "" },
)

// everyone keys every request alike, for the global limit.
func everyone(*http.Request) (string, error) { return "all", nil }

// groupKeys are the keys of the group newGroup returns, in its order.
var groupKeys = []KeyFunc{byUser, everyone}

// newGroup returns a group of a per-user limiter on perUser and a global
// one on global, in that order, on clock.
func newGroup(
	t *testing.T,
	perUser, global store.Store,
	clock *ratewisetest.Clock,
	opts ...ratewise.Option,
) (*ratewise.MultiKey, *ratewise.Limiter, *ratewise.Limiter) {
	t.Helper()
	user, err := ratewise.New(
		perUser,
		perUserAlg,
		append([]ratewise.Option{ratewise.WithClock(clock), ratewise.WithNamespace("user")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	all, err := ratewise.New(global, globalAlg, ratewise.WithClock(clock), ratewise.WithNamespace("global"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := ratewise.NewMultiKey(user, all)
	if err != nil {
		t.Fatal(err)
	}
	return g, user, all
}

// serveAs serves a request from user ("" for an anonymous one).
func serveAs(h http.Handler, user string) *http.Response {
	r := httptest.NewRequest("GET", "/pay", nil)
	if user != "" {
		r.Header.Set("X-User", user)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Result()
}

// peek is what l has left for key now, charging nothing.
func peek(t *testing.T, l *ratewise.Limiter, key string) ratewise.Result {
	t.Helper()
	res, err := l.PeekN(context.Background(), key, 1)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A per-user limit and a global one: a request passes only if both admit
// it and is then charged to both; denied, it is charged to neither. The
// RateLimit fields describe the binding limit, read back from the limiter
// itself, and Retry-After is the wait after which both admit.
func TestMultiKeyMiddleware(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratewisetest.NewClock(start)
	s := storememory.New()
	g, perUser, global := newGroup(t, s, s, clock)
	m, err := NewMultiKey(g, groupKeys, WithLegacyHeaders())
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler(ok)
	const user, all = 0, 1 // the limits, in the group's order
	limiters := []*ratewise.Limiter{perUser, global}
	policies := fmt.Sprintf(`"default-1";q=%d;w=%d, "default-2";q=%d;w=%d`,
		perUserAlg.Limit, int64(perUserAlg.Window/time.Second), globalAlg.Limit, int64(globalAlg.Window/time.Second))
	for i, step := range []struct {
		at   time.Duration // since start
		user string
		// binding is the limit RateLimit describes, and retryAfter the
		// wait of a denied request, 0 for an admitted one.
		binding    int
		retryAfter time.Duration
	}{
		// Alice has 1 of 2 left, everyone 3 of 4: her own limit binds.
		{0, "alice", user, 0},
		// Bob 1 of 2, everyone 2 of 4.
		{time.Second, "bob", user, 0},
		// Alice 0 of 2, everyone 1 of 4.
		{2 * time.Second, "alice", user, 0},
		// Alice's limit denies while the global one has room, until her
		// first request leaves her window.
		{3 * time.Second, "alice", user, perUserAlg.Window - 3*time.Second},
		// Carol 1 of 2, everyone 0 of 4: the global limit binds. It had
		// room because alice's denied request took none of it.
		{4 * time.Second, "carol", all, 0},
		// The global limit denies bob, who has 1 left of his own, until
		// the first global request leaves the hour.
		{5 * time.Second, "bob", all, globalAlg.Window - 5*time.Second},
		// Both deny alice: the global wait is the longer, and the one
		// after which the whole request is admitted.
		{6 * time.Second, "alice", all, globalAlg.Window - 6*time.Second},
		// A second before the first global request leaves the hour, still
		// denied; at that moment, admitted.
		{globalAlg.Window - time.Second, "alice", all, time.Second},
		{globalAlg.Window, "alice", all, 0},
	} {
		clock.Set(start.Add(step.at))
		keys := []string{keypart.Pair("user", step.user), "all"}
		before := []ratewise.Result{peek(t, perUser, keys[user]), peek(t, global, keys[all])}
		resp := serveAs(h, step.user)
		after := []ratewise.Result{peek(t, perUser, keys[user]), peek(t, global, keys[all])}

		wantStatus, charged := http.StatusOK, int64(1)
		if step.retryAfter > 0 {
			wantStatus, charged = http.StatusTooManyRequests, 0
		}
		if resp.StatusCode != wantStatus {
			t.Fatalf("request %d (%s at %v): status %d, want %d", i, step.user, step.at, resp.StatusCode, wantStatus)
		}
		for l := range limiters {
			if got, want := after[l].Remaining, before[l].Remaining-charged; got != want {
				t.Fatalf(
					"request %d (%s at %v): limit %d has %d left, want %d: all or nothing",
					i,
					step.user,
					step.at,
					l+1,
					got,
					want,
				)
			}
		}
		b := after[step.binding]
		want := map[string]string{
			"RateLimit-Policy": policies,
			"RateLimit": fmt.Sprintf(
				`"default-%d";r=%d;t=%d`,
				step.binding+1,
				b.Remaining,
				ratelimitheader.CeilSeconds(b.ResetAfter),
			),
			"X-RateLimit-Limit":     strconv.FormatInt(b.Limit, 10),
			"X-RateLimit-Remaining": strconv.FormatInt(b.Remaining, 10),
			"X-RateLimit-Reset":     strconv.FormatInt(ratelimitheader.CeilSeconds(b.ResetAfter), 10),
			"Retry-After":           "",
		}
		if step.retryAfter > 0 {
			want["Retry-After"] = strconv.FormatInt(RetryAfterSeconds(step.retryAfter), 10)
		}
		for k, v := range want {
			if got := strings.Join(resp.Header.Values(k), ", "); got != v {
				t.Fatalf("request %d (%s at %v): %s: got %q, want %q", i, step.user, step.at, k, got, v)
			}
		}
	}
}

// A request without a key is answered as WithNoKey says, as under New,
// and charged to no limit, the global one included.
func TestMultiKeyNoKey(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name   string
		opts   []Option
		status int
		heard  bool // whether the OnError hook hears of each request
	}{
		{"default", nil, http.StatusInternalServerError, true},
		{"401", []Option{WithNoKey(http.StatusUnauthorized)}, http.StatusUnauthorized, false},
		{"unlimited", []Option{WithNoKey(NoKeyUnlimited)}, http.StatusOK, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := storememory.New()
			g, _, global := newGroup(t, s, s, clock)
			h := &hook{}
			m, err := NewMultiKey(g, groupKeys, append([]Option{WithOnError(h.record)}, c.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range globalAlg.Limit + 1 { // more than the global limit
				if resp := serveAs(m.Handler(ok), ""); resp.StatusCode != c.status ||
					resp.Header.Get("RateLimit") != "" {
					t.Fatalf(
						"anonymous request %d: %d, RateLimit %q; want %d and none",
						i,
						resp.StatusCode,
						resp.Header.Get("RateLimit"),
						c.status,
					)
				}
			}
			want := 0
			if c.heard {
				want = int(globalAlg.Limit + 1)
			}
			if got := h.count(); got != want || want > 0 && !errors.Is(h.errs[0], ErrNoKey) {
				t.Fatalf("the hook heard %v, want %d errors matching ErrNoKey", h.errs, want)
			}
			if got, want := peek(t, global, "all").Remaining, globalAlg.Limit; got != want {
				t.Fatalf("the global limit has %d left, want %d: a request without a key was charged", got, want)
			}
		})
	}
}

// brokenStore is a memory store that fails as one that has gone away does:
// on every decision, only on those that charge (chargesOnly), or by not
// answering until the decision's context ends (silent).
type brokenStore struct {
	store.Store         // nil: only Decide, Reset and Refund are called
	mem                 *storememory.Store
	chargesOnly, silent bool
}

func (s brokenStore) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	key := sk.String()
	switch {
	case s.silent:
		<-ctx.Done()
		return algorithms.Result{}, ctx.Err()
	case cost > 0 || !s.chargesOnly:
		return algorithms.Result{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	}
	return s.mem.Decide(ctx, store.Key{Name: key}, alg, now, cost)
}

func (s brokenStore) Reset(ctx context.Context, sk store.Key, alg algorithms.Algorithm) error {
	key := sk.String()
	return s.mem.Reset(ctx, store.Key{Name: key}, alg)
}

func (s brokenStore) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	key := sk.String()
	return s.mem.Refund(ctx, store.Key{Name: key}, alg, now, at, n)
}

// When the global limit's store fails, the failure mode answers as under
// New, the OnError hook and the observer hear of it, and the user's own
// limit is left as it was: unchecked if the global store failed first,
// refunded if it failed after the user's limit was charged.
func TestMultiKeyStoreFailure(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name   string
		broken brokenStore
		policy FailureMode
		// status and retryAfter are the answer; allowed and timeout the
		// observer's event.
		status     int
		retryAfter string
		allowed    bool
		timeout    bool
	}{
		{"fail closed 503", brokenStore{}, FailClosed(503, time.Second), 503, "1", false, false},
		{"fail closed 429", brokenStore{}, FailClosed(429, 1500*time.Millisecond), 429, "2", false, false},
		{"fail open", brokenStore{}, FailOpen(), 200, "", true, false},
		{"fail closed after the user's limit was charged", brokenStore{chargesOnly: true}, FailClosed(503, time.Second),
			503, "1", false, false},
		{"fail open after the user's limit was charged", brokenStore{chargesOnly: true}, FailOpen(), 200, "", true, false},
		{"timeout, fail closed", brokenStore{silent: true}, FailClosed(503, time.Second), 503, "1", false, true},
		{"timeout, fail open", brokenStore{silent: true}, FailOpen(), 200, "", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.broken.mem = storememory.New()
			g, perUser, _ := newGroup(t, storememory.New(), c.broken, clock)
			h, rec := &hook{}, &degradedRecorder{}
			m, err := NewMultiKey(
				g,
				groupKeys,
				WithFailureMode(c.policy),
				WithOnError(h.record),
				WithObserver(rec.observe),
				WithTimeout(20*time.Millisecond),
			)
			if err != nil {
				t.Fatal(err)
			}
			resp := serveAs(m.Handler(ok), "alice")
			if resp.StatusCode != c.status || resp.Header.Get("Retry-After") != c.retryAfter ||
				resp.Header.Get("RateLimit") != "" {
				t.Fatalf(
					"status %d, Retry-After %q, RateLimit %q; want %d, %q and no RateLimit",
					resp.StatusCode,
					resp.Header.Get("Retry-After"),
					resp.Header.Get("RateLimit"),
					c.status,
					c.retryAfter,
				)
			}
			if h.count() != 1 || !errors.Is(h.errs[0], store.ErrUnavailable) {
				t.Fatalf("the hook heard %v, want one store.ErrUnavailable", h.errs)
			}
			events := rec.all()
			want := DegradedEvent{Mode: c.policy.failure().mode.Name(), Allowed: c.allowed, Quota: "default"}
			if len(events) != 1 || events[0].Err != h.errs[0] {
				t.Fatalf("the observer heard %+v, want one event with the hook's error", events)
			}
			if got := errors.Is(events[0].Err, context.DeadlineExceeded); got != c.timeout {
				t.Fatalf("event's error %v: a timeout: %v, want %v", events[0].Err, got, c.timeout)
			}
			if events[0].Err = nil; events[0] != want {
				t.Fatalf("event: got %+v, want %+v", events[0], want)
			}
			if got, want := peek(t, perUser, keypart.Pair("user", "alice")).Remaining, perUserAlg.Limit; got != want {
				t.Fatalf("alice's own limit has %d left, want %d: the failed request was charged", got, want)
			}
		})
	}
}

// The other options apply to a MultiKey as to a Limiter: a cost, with 413
// above the smallest limit; a dry run; exemptions; and each key's own
// limit (ratewise.WithTiers) in the headers.
func TestMultiKeyOptions(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	t.Run("cost", func(t *testing.T) {
		s := storememory.New()
		g, perUser, global := newGroup(t, s, s, clock)
		m, err := NewMultiKey(
			g,
			groupKeys,
			WithCost(
				func(r *http.Request) (int64, error) { return strconv.ParseInt(r.URL.Query().Get("cost"), 10, 64) },
			),
		)
		if err != nil {
			t.Fatal(err)
		}
		send := func(cost int64) int {
			r := httptest.NewRequest("GET", "/?cost="+strconv.FormatInt(cost, 10), nil)
			r.Header.Set("X-User", "alice")
			w := httptest.NewRecorder()
			m.Handler(ok).ServeHTTP(w, r)
			return w.Code
		}
		// More than the per-user limit, within the global one: never
		// admissible, and charged to neither.
		if got := send(perUserAlg.Limit + 1); got != http.StatusRequestEntityTooLarge {
			t.Fatalf("a cost above the per-user limit: %d, want 413", got)
		}
		if got := send(perUserAlg.Limit); got != http.StatusOK {
			t.Fatalf("a cost of the per-user limit: %d, want 200", got)
		}
		if got, want := peek(t, perUser, keypart.Pair("user", "alice")).Remaining, int64(0); got != want {
			t.Fatalf("alice has %d left, want %d", got, want)
		}
		if got, want := peek(t, global, "all").Remaining, globalAlg.Limit-perUserAlg.Limit; got != want {
			t.Fatalf("the global limit has %d left, want %d", got, want)
		}
	})
	t.Run("dry run", func(t *testing.T) {
		s := storememory.New()
		g, _, global := newGroup(t, s, s, clock)
		var wouldDeny []ratewise.Result
		m, err := NewMultiKey(
			g,
			groupKeys,
			WithDryRun(func(_ *http.Request, res ratewise.Result) { wouldDeny = append(wouldDeny, res) }),
		)
		if err != nil {
			t.Fatal(err)
		}
		// Each user once, one more than the global limit.
		for i := range globalAlg.Limit + 1 {
			if resp := serveAs(m.Handler(ok), fmt.Sprint("user", i)); resp.StatusCode != http.StatusOK ||
				resp.Header.Get("Retry-After") != "" {
				t.Fatalf(
					"request %d: %d, Retry-After %q; want 200 and none",
					i,
					resp.StatusCode,
					resp.Header.Get("Retry-After"),
				)
			}
		}
		// The global limit would have denied the last, for its window:
		// every request came at the same instant.
		if len(wouldDeny) != 1 || wouldDeny[0].Limit != globalAlg.Limit || wouldDeny[0].RetryAfter != globalAlg.Window {
			t.Fatalf("the dry-run hook heard %+v, want the global limit's denial", wouldDeny)
		}
		if got := peek(t, global, "all").Remaining; got != 0 {
			t.Fatalf("the global limit has %d left, want 0", got)
		}
	})
	t.Run("exempt", func(t *testing.T) {
		s := storememory.New()
		g, perUser, _ := newGroup(t, s, s, clock)
		m, err := NewMultiKey(
			g,
			groupKeys,
			WithExempt(func(r *http.Request) bool { return r.Header.Get("X-User") == "ops" }),
		)
		if err != nil {
			t.Fatal(err)
		}
		for range perUserAlg.Limit + 1 {
			if resp := serveAs(m.Handler(ok), "ops"); resp.StatusCode != http.StatusOK ||
				resp.Header.Get("RateLimit") != "" {
				t.Fatalf("exempt request: %d, RateLimit %q", resp.StatusCode, resp.Header.Get("RateLimit"))
			}
		}
		if got, want := peek(t, perUser, keypart.Pair("user", "ops")).Remaining, perUserAlg.Limit; got != want {
			t.Fatalf("the exempt user has %d left, want %d", got, want)
		}
	})
	t.Run("a key's own limit", func(t *testing.T) {
		vip := algorithms.SlidingLog{Limit: 10, Window: 2 * time.Minute}
		s := storememory.New()
		g, _, _ := newGroup(
			t,
			s,
			s,
			clock,
			ratewise.WithTiers(func(_ context.Context, key string) (algorithms.Algorithm, error) {
				if key == keypart.Pair("user", "vip") {
					return vip, nil
				}
				return nil, nil
			}),
		)
		m, err := NewMultiKey(g, groupKeys)
		if err != nil {
			t.Fatal(err)
		}
		for user, alg := range map[string]algorithms.SlidingLog{"vip": vip, "alice": perUserAlg} {
			resp := serveAs(m.Handler(ok), user)
			want := fmt.Sprintf(`"default-1";q=%d;w=%d, "default-2";q=%d;w=%d`,
				alg.Limit, int64(alg.Window/time.Second), globalAlg.Limit, int64(globalAlg.Window/time.Second))
			if got := strings.Join(resp.Header.Values("RateLimit-Policy"), ", "); got != want {
				t.Errorf("%s: RateLimit-Policy %q, want %q", user, got, want)
			}
		}
	})
}

// NewMultiKey refuses what it cannot apply with ratewise.ErrInvalidConfig, and
// checks the rest of its options as New does.
func TestNewMultiKeyRejectsBadInput(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	s := storememory.New()
	g, _, _ := newGroup(t, s, s, clock)
	local := Fallback(newLimiter(t, perUserAlg, clock))
	for _, c := range []struct {
		name  string
		group *ratewise.MultiKey
		keys  []KeyFunc
		opts  []Option
	}{
		{"nil group", nil, groupKeys, nil},
		{"no keys", g, nil, nil},
		{"too few keys", g, groupKeys[:1], nil},
		{"too many keys", g, append(groupKeys[:2:2], everyone), nil},
		{"nil KeyFunc", g, []KeyFunc{byUser, nil}, nil},
		{"WithKey", g, groupKeys, []Option{WithKey(everyone)}},
		{"Fallback", g, groupKeys, []Option{WithFailureMode(local)}},
	} {
		if _, err := NewMultiKey(c.group, c.keys, c.opts...); !errors.Is(err, ratewise.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ratewise.ErrInvalidConfig", c.name, err)
		}
	}
	for _, p := range []FailureMode{FailClosed(500, 0), FailClosed(429, 0)} {
		if _, err := NewMultiKey(g, groupKeys, WithFailureMode(p)); err == nil {
			t.Errorf("NewMultiKey with %+v: no error", p)
		}
	}
	m, err := NewMultiKey(g, groupKeys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Route("login", perUserAlg); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Errorf("Route on a MultiKey's middleware: got %v, want ratewise.ErrInvalidConfig", err)
	}
}
