package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// hook records the errors the OnError hook hears of.
type hook struct {
	mu   sync.Mutex
	errs []error
}

func (h *hook) record(_ *http.Request, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.errs)
}

var policyAlg = algorithms.SlidingLog{Limit: 3, Window: time.Minute}

// redisLimiter starts a redis-server of the test's own, so that the test
// can kill it, and returns a limiter on it and the function that kills it.
func redisLimiter(t *testing.T) (*ratewise.Limiter, func()) {
	t.Helper()
	redistest.Require(t)
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	l, err := ratewise.New(storeredis.New(rdb), policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	return l, srv.Stop
}

// Each policy, with a real Redis that is killed during the test: before,
// the store decides; after, the policy does, within the decision timeout,
// and the hook hears of every failure.
func TestPoliciesWhenRedisDies(t *testing.T) {
	local, err := Share(policyAlg, 3)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		policy func() FailureMode
		// after is the status every request gets once Redis is dead, and
		// header the header that must be set ("" for none).
		after                int
		header, headerValue  string
		admittedAfterTheKill int
	}{
		{"fail closed 503", func() FailureMode { return FailClosed(503, 2*time.Second) }, 503, "Retry-After", "2", 0},
		{
			"fail closed 429",
			func() FailureMode { return FailClosed(429, 1500*time.Millisecond) },
			429,
			"Retry-After",
			"2",
			0,
		},
		{"fail open", FailOpen, 200, "", "", 5},
		{"fallback to a local share", func() FailureMode {
			l, err := ratewise.New(storememory.New(), local)
			if err != nil {
				t.Fatal(err)
			}
			return Fallback(l)
		}, 0, "RateLimit", "", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, kill := redisLimiter(t)
			h := &hook{}
			m, err := New(l, WithFailureMode(c.policy()), WithOnError(h.record), WithTimeout(300*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			handler := m.Handler(ok)
			if resp := serve(handler, "192.0.2.1:1"); resp.StatusCode != 200 ||
				resp.Header.Get("RateLimit") != `"default";r=2;t=60` {
				t.Fatalf("before the kill: %d %q", resp.StatusCode, resp.Header.Get("RateLimit"))
			}
			kill()
			admitted := 0
			for i := range 5 {
				start := time.Now()
				resp := serve(handler, "192.0.2.1:1")
				if took := time.Since(start); took > 5*time.Second {
					t.Fatalf("request %d after the kill took %v", i, took)
				}
				if resp.StatusCode == 200 {
					admitted++
				}
				if c.after != 0 && resp.StatusCode != c.after {
					t.Fatalf("request %d after the kill: status %d, want %d", i, resp.StatusCode, c.after)
				}
				if c.header != "" && resp.Header.Get(c.header) == "" {
					t.Fatalf("request %d after the kill: no %s", i, c.header)
				}
				if c.headerValue != "" && resp.Header.Get(c.header) != c.headerValue {
					t.Fatalf(
						"request %d after the kill: %s %q, want %q",
						i,
						c.header,
						resp.Header.Get(c.header),
						c.headerValue,
					)
				}
				if c.header == "" && resp.Header.Get("RateLimit") != "" {
					t.Fatalf("failed open with RateLimit %q: nothing was decided", resp.Header.Get("RateLimit"))
				}
			}
			if admitted != c.admittedAfterTheKill {
				t.Fatalf("admitted %d of 5 after the kill, want %d", admitted, c.admittedAfterTheKill)
			}
			if got := h.count(); got != 5 {
				t.Fatalf("the hook heard of %d failures, want 5", got)
			}
			for _, err := range h.errs {
				if !errors.Is(err, store.ErrUnavailable) {
					t.Fatalf("hook error %v does not wrap store.ErrUnavailable", err)
				}
			}
		})
	}
}

// A Redis that accepts connections but never answers: the decision timeout
// bounds every request, on a client that honours deadlines.
func TestTimeoutBoundsASilentStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				buf := make([]byte, 1024)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
				}
			}()
		}
	}()
	// The client honours the decision's deadline on the socket, as
	// docs/redis.md recommends: the middleware waits for the store, which
	// must return by its context's deadline.
	rdb := redis.NewClient(
		&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, Protocol: 2, ContextTimeoutEnabled: true},
	)
	t.Cleanup(func() { rdb.Close() })
	l, err := ratewise.New(storeredis.New(rdb), policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	h := &hook{}
	m, _ := New(l, WithOnError(h.record), WithTimeout(100*time.Millisecond))
	start := time.Now()
	resp := serve(m.Handler(ok), "192.0.2.1:1")
	took := time.Since(start)
	if resp.StatusCode != 503 || took > 2*time.Second {
		t.Fatalf("silent store: status %d after %v, want 503 soon after the 100ms timeout", resp.StatusCode, took)
	}
	if h.count() != 1 || !errors.Is(h.errs[0], store.ErrUnavailable) {
		t.Fatalf("hook: %v", h.errs)
	}
}

// failingStore fails every decision with err, and has no way to tell
// ratewise.New in advance.
type failingStore struct{ err error }

func (s failingStore) Decide(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	int64,
) (algorithms.Result, error) {
	return algorithms.Result{}, s.err
}

func (s failingStore) Reset(context.Context, store.Key, algorithms.Algorithm) error { return s.err }

func (s failingStore) DecideSet(
	context.Context,
	store.Key,
	[]algorithms.Algorithm,
	time.Time,
	int64,
) ([]algorithms.Result, error) {
	return nil, s.err
}

func (s failingStore) Reserve(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	int64,
	time.Duration,
) (algorithms.Result, time.Duration, error) {
	return algorithms.Result{}, 0, s.err
}

func (s failingStore) Refund(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	time.Time,
	int64,
) (algorithms.Result, error) {
	return algorithms.Result{}, s.err
}

func (s failingStore) Lease(
	context.Context,
	store.Key,
	algorithms.Algorithm,
	time.Time,
	int64,
	time.Duration,
) (algorithms.Result, time.Duration, error) {
	return algorithms.Result{}, 0, s.err
}

func (s failingStore) Capabilities() store.Capabilities { return store.Capabilities{} }

// TestOnlyStoreFailuresReachTheFailureMode: with FailOpen, an unavailable store
// lets requests through, but an algorithm the store cannot run, a broken
// clock or a key that cannot be built is a 500, and the hook hears of every
// one.
func TestOnlyStoreFailuresReachTheFailureMode(t *testing.T) {
	limiter := func(s store.Store, opts ...ratewise.Option) *ratewise.Limiter {
		l, err := ratewise.New(s, policyAlg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tt := range []struct {
		name    string
		limiter *ratewise.Limiter
		opts    []Option
		status  int
		want    error
	}{
		{"store unavailable", limiter(failingStore{fmt.Errorf("%w: connection refused", store.ErrUnavailable)}),
			nil, 200, store.ErrUnavailable},
		{"algorithm unsupported", limiter(failingStore{fmt.Errorf("%w: no script", store.ErrUnsupported)}),
			nil, 500, store.ErrUnsupported},
		{"clock at the zero time", limiter(storememory.New(), ratewise.WithClock(ratewisetest.NewClock(time.Time{}))),
			nil, 500, algorithms.ErrInvalidTime},
		{"no key", limiter(storememory.New()),
			[]Option{WithKey(ByUser(func(*http.Request) (string, bool) { return "", false }))}, 500, ErrNoKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &hook{}
			m, err := New(
				tt.limiter,
				append([]Option{WithFailureMode(FailOpen()), WithOnError(h.record)}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			if resp := serve(m.Handler(ok), "192.0.2.1:1"); resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if h.count() != 1 || !errors.Is(h.errs[0], tt.want) {
				t.Fatalf("the hook heard %v, want one error matching %v", h.errs, tt.want)
			}
		})
	}
}

// TestFallbackThatFailsIsUnavailable: when the fallback limiter fails too,
// the request gets 503, as Fallback documents, not a 500.
func TestFallbackThatFailsIsUnavailable(t *testing.T) {
	down := fmt.Errorf("%w: down", store.ErrUnavailable)
	shared, err := ratewise.New(failingStore{err: down}, policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	local, err := ratewise.New(failingStore{err: down}, policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(shared, WithFailureMode(Fallback(local)))
	if err != nil {
		t.Fatal(err)
	}
	if resp := serve(m.Handler(ok), "192.0.2.1:1"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("both the store and the fallback failed: status %d, want 503", resp.StatusCode)
	}
}
