package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// degradedRecorder is an observer (WithObserver(d.observe)) that keeps every
// event.
type degradedRecorder struct {
	mu     sync.Mutex
	events []DegradedEvent
}

func (d *degradedRecorder) observe(_ context.Context, e DegradedEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, e)
}

func (d *degradedRecorder) all() []DegradedEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DegradedEvent(nil), d.events...)
}

// silentStore never answers: when its context ends, it fails with err, or
// with the context's error if err is nil.
type silentStore struct {
	store.Store // nil: only Decide and Reset are called
	err         error
}

func (s silentStore) Decide(
	ctx context.Context,
	_ store.Key,
	_ algorithms.Algorithm,
	_ time.Time,
	_ int64,
) (algorithms.Result, error) {
	<-ctx.Done()
	if s.err != nil {
		return algorithms.Result{}, s.err
	}
	return algorithms.Result{}, ctx.Err()
}

func (silentStore) Reset(context.Context, store.Key, algorithms.Algorithm) error { return nil }

// Every request a policy answers reaches the observer, with the policy,
// what was done and the store's error, which tells a timeout.
func TestObserverHearsDegradedDecisions(t *testing.T) {
	unavailable := failingStore{fmt.Errorf("%w: connection refused", store.ErrUnavailable)}
	local := func(limit int64) FailureMode {
		l, err := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: limit, Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return Fallback(l)
	}
	for _, tt := range []struct {
		name    string
		store   store.Store
		policy  FailureMode
		opts    []Option
		status  int
		want    DegradedEvent
		timeout bool
		// requests is how many requests to serve; the last one's event
		// is checked.
		requests int
	}{
		{"fail open", unavailable, FailOpen(), nil, 200,
			DegradedEvent{Mode: "fail_open", Allowed: true, Quota: "default"}, false, 1},
		{"fail closed", unavailable, FailClosed(503, time.Second), nil, 503,
			DegradedEvent{Mode: "fail_closed", Quota: "default"}, false, 1},
		{"fallback admits", unavailable, local(1), nil, 200,
			DegradedEvent{Mode: "fallback", Allowed: true, Quota: "default"}, false, 1},
		{"fallback denies", unavailable, local(1), nil, 429, DegradedEvent{Mode: "fallback", Quota: "default"}, false, 2},
		// The local limiter refuses the cost: 503, as FailClosed(503, 0).
		{"fallback fails too", unavailable, local(1),
			[]Option{WithCost(func(*http.Request) (int64, error) { return 2, nil })},
			503, DegradedEvent{Mode: "fallback", Quota: "default"}, false, 1},
		{"timeout, fail closed", silentStore{}, FailClosed(503, time.Second), []Option{WithQuotaName("api")},
			503, DegradedEvent{Mode: "fail_closed", Quota: "api"}, true, 1},
		{"timeout, fail open", silentStore{}, FailOpen(), nil, 200,
			DegradedEvent{Mode: "fail_open", Allowed: true, Quota: "default"}, true, 1},
		// A store that gives up on the deadline with an error of its own,
		// as a Redis client with ContextTimeoutEnabled does.
		{"timeout, store gives up", silentStore{err: fmt.Errorf("%w: i/o timeout", store.ErrUnavailable)},
			FailOpen(), nil, 200, DegradedEvent{Mode: "fail_open", Allowed: true, Quota: "default"}, true, 1},
		// One that gives up on it with an error that says neither.
		{"timeout, store says neither", silentStore{err: errors.New("connection reset")},
			FailOpen(), nil, 200, DegradedEvent{Mode: "fail_open", Allowed: true, Quota: "default"}, true, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ratewise.New(tt.store, policyAlg)
			if err != nil {
				t.Fatal(err)
			}
			rec, h := &degradedRecorder{}, &hook{}
			opts := append(
				[]Option{
					WithFailureMode(tt.policy),
					WithObserver(rec.observe),
					WithOnError(h.record),
					WithTimeout(20 * time.Millisecond),
				},
				tt.opts...)
			m, err := New(l, opts...)
			if err != nil {
				t.Fatal(err)
			}
			var status int
			for range tt.requests {
				status = serve(m.Handler(ok), "192.0.2.1:1").StatusCode
			}
			if status != tt.status {
				t.Fatalf("status: got %d, want %d", status, tt.status)
			}
			events := rec.all()
			if got, want := len(events), tt.requests; got != want {
				t.Fatalf("events: got %d, want %d", got, want)
			}
			e := events[len(events)-1]
			if !errors.Is(e.Err, store.ErrUnavailable) || e.Err != h.errs[len(h.errs)-1] {
				t.Errorf("Err: got %v, want the OnError hook's %v", e.Err, h.errs)
			}
			if got := errors.Is(e.Err, context.DeadlineExceeded); got != tt.timeout {
				t.Errorf("Err: got %v, a timeout: %v, want %v", e.Err, got, tt.timeout)
			}
			e.Err = nil
			if e != tt.want {
				t.Errorf("event: got %+v, want %+v", e, tt.want)
			}
		})
	}
}

// A decision the store made is not degraded, and an error that is no store
// failure is not the policy's to answer: neither reaches the observer.
func TestObserverHearsOnlyDegradedDecisions(t *testing.T) {
	for _, tt := range []struct {
		name   string
		store  store.Store
		status int
	}{
		{"store decides", storememory.New(), 200},
		{"algorithm unsupported", failingStore{fmt.Errorf("%w: no script", store.ErrUnsupported)}, 500},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ratewise.New(tt.store, policyAlg)
			if err != nil {
				t.Fatal(err)
			}
			rec := &degradedRecorder{}
			m, err := New(
				l,
				WithFailureMode(FailOpen()),
				WithObserver(rec.observe),
				WithOnError(func(*http.Request, error) {}),
			)
			if err != nil {
				t.Fatal(err)
			}
			if got := serve(m.Handler(ok), "192.0.2.1:1").StatusCode; got != tt.status {
				t.Fatalf("status: got %d, want %d", got, tt.status)
			}
			if events := rec.all(); len(events) != 0 {
				t.Fatalf("events: %+v, want none", events)
			}
		})
	}
}
