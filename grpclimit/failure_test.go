package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

var policyAlg = algorithms.SlidingLog{Limit: 4, Window: time.Minute}

// Each failure mode, on a store that fails every decision: the calls get
// the mode's answer, the OnError hook hears of every failure before it,
// and the observer of each degraded decision.
func TestFailureModes(t *testing.T) {
	unavailable := fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	share, err := Share(policyAlg, 4) // 1 a minute
	if err != nil {
		t.Fatal(err)
	}
	clock := ratewisetest.NewClock(start)
	local := func(s store.Store) *ratewise.Limiter {
		l, err := ratewise.New(s, share, ratewise.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	type answer struct {
		code codes.Code
		trailers
		retry time.Duration
	}
	for _, c := range []struct {
		name    string
		mode    FailureMode // nil: the default
		answers []answer    // of consecutive calls
		allowed []bool      // the events' Allowed
	}{
		{
			"default, fail closed", nil,
			[]answer{{codes.Unavailable, trailers{"", "", "1"}, time.Second}},
			[]bool{false},
		},
		{
			"fail closed, ResourceExhausted", FailClosed(codes.ResourceExhausted, 1500*time.Millisecond),
			[]answer{{codes.ResourceExhausted, trailers{"", "", "2"}, 1500 * time.Millisecond}},
			[]bool{false},
		},
		{
			"fail closed without a wait", FailClosed(codes.Unavailable, 0),
			[]answer{{codes.Unavailable, trailers{}, 0}},
			[]bool{false},
		},
		{
			"fail open", FailOpen(),
			[]answer{{codes.OK, trailers{}, 0}, {codes.OK, trailers{}, 0}},
			[]bool{true, true},
		},
		{
			"fallback to a local share", Fallback(local(storememory.New())),
			[]answer{
				{codes.OK, trailers{`"default";q=1;w=60`, `"default";r=0;t=60`, ""}, 0},
				{codes.ResourceExhausted, trailers{`"default";q=1;w=60`, `"default";r=0;t=60`, "60"}, time.Minute},
			},
			[]bool{true, false},
		},
		{
			"fallback that fails too", Fallback(local(failingStore{unavailable})),
			[]answer{{codes.Unavailable, trailers{}, 0}},
			[]bool{false},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := ratewise.New(failingStore{unavailable}, policyAlg, ratewise.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			h, d := &hook{}, &degraded{}
			opts := []Option{WithOnError(h.record), WithObserver(d.observe), WithQuotaName("default")}
			if c.mode != nil {
				opts = append(opts, WithFailureMode(c.mode))
			}
			in, err := New(l, opts...)
			if err != nil {
				t.Fatal(err)
			}
			cl := serve(t, in)
			for i, want := range c.answers {
				md, err := call(t, cl)
				if got := status.Code(err); got != want.code {
					t.Fatalf("call %d: %v, want %v", i+1, err, want.code)
				}
				if got := trailersOf(md); got != want.trailers {
					t.Fatalf("call %d: trailers %+v, want %+v", i+1, got, want.trailers)
				}
				if got, ok := retryDelay(err); got != want.retry || ok != (want.retry > 0) {
					t.Fatalf("call %d: RetryInfo %v (%v), want %v", i+1, got, ok, want.retry)
				}
			}
			heard, events := h.heard(), d.all()
			if len(heard) != len(c.answers) || len(events) != len(c.answers) {
				t.Fatalf("the hook heard %v and the observer %+v, want %d of each", heard, events, len(c.answers))
			}
			mode := httplimit.ModeFailClosed
			if c.mode != nil {
				mode = c.mode.failure().mode.Name()
			}
			for i, e := range events {
				if !errors.Is(heard[i], store.ErrUnavailable) || e.Err != heard[i] {
					t.Fatalf("call %d: the hook heard %v, the observer %v; want the store's error", i+1, heard[i], e.Err)
				}
				if want := (DegradedEvent{Mode: mode, Allowed: c.allowed[i], Quota: "default", Err: e.Err}); e != want {
					t.Fatalf("call %d: event %+v, want %+v", i+1, e, want)
				}
			}
		})
	}
}

// A store that does not answer within the decision timeout has failed: the
// failure mode answers, and the event's error matches
// context.DeadlineExceeded.
func TestTimeout(t *testing.T) {
	l, err := ratewise.New(silentStore{}, policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	d := &degraded{}
	in, err := New(l, WithTimeout(50*time.Millisecond), WithFailureMode(FailOpen()), WithObserver(d.observe),
		WithOnError(func(context.Context, string, error) {}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, serve(t, in)); err != nil {
		t.Fatalf("a call on a silent store under FailOpen: %v", err)
	}
	if events := d.all(); len(events) != 1 || !errors.Is(events[0].Err, context.DeadlineExceeded) {
		t.Fatalf("events %+v, want one whose error matches context.DeadlineExceeded", events)
	}
}

// An error that is no store failure, such as an algorithm the store cannot
// run, is never the failure mode's: even under FailOpen the call fails with
// Internal, and the hook hears of it.
func TestOnlyStoreFailuresReachTheFailureMode(t *testing.T) {
	l, err := ratewise.New(failingStore{fmt.Errorf("%w: no script", store.ErrUnsupported)}, policyAlg)
	if err != nil {
		t.Fatal(err)
	}
	h, d := &hook{}, &degraded{}
	in, err := New(l, WithFailureMode(FailOpen()), WithOnError(h.record), WithObserver(d.observe))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, serve(t, in)); status.Code(err) != codes.Internal {
		t.Fatalf("got %v, want Internal", err)
	}
	if heard := h.heard(); len(heard) != 1 || !errors.Is(heard[0], store.ErrUnsupported) || len(d.all()) != 0 {
		t.Fatalf("the hook heard %v, the observer %+v; want one store.ErrUnsupported and no event", heard, d.all())
	}
}

// records counts the warnings logged through slog.
type records struct {
	mu       sync.Mutex
	warnings int
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rec.Level == slog.LevelWarn {
		r.warnings++
	}
	return nil
}

func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }

func (r *records) WithGroup(string) slog.Handler { return r }

func (r *records) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.warnings
}

// The default OnError hook logs a warning for a store failure and for a
// call without a key that nothing answers, but none for a call without a
// key that WithNoKey answers.
func TestDefaultHookWarns(t *testing.T) {
	for _, c := range []struct {
		name     string
		store    store.Store
		md       []string // the call's metadata
		opts     []Option
		warnings int
	}{
		{"store failure", failingStore{store.ErrUnavailable}, []string{"x-api-key", "k1"}, nil, 1},
		{"no key", storememory.New(), nil, nil, 1},
		{"no key, answered", storememory.New(), nil, []Option{WithNoKey(codes.Unauthenticated)}, 0},
		{"no key, unlimited", storememory.New(), nil, []Option{WithNoKey(NoKeyUnlimited)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &records{}
			prev := slog.Default()
			slog.SetDefault(slog.New(rec))
			t.Cleanup(func() { slog.SetDefault(prev) })
			l, err := ratewise.New(c.store, policyAlg)
			if err != nil {
				t.Fatal(err)
			}
			in, err := New(l, append(c.opts, WithKey(ByMetadata("x-api-key")))...)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = call(t, serve(t, in), c.md...)
			if got := rec.count(); got != c.warnings {
				t.Fatalf("%d warnings logged, want %d", got, c.warnings)
			}
		})
	}
}

// Bad input fails construction with an error that wraps
// ratewise.ErrInvalidConfig, never a panic or a failure later.
func TestNewRejectsBadInput(t *testing.T) {
	clock := ratewisetest.NewClock(start)
	l := newLimiter(t, policyAlg, clock)
	other := newLimiter(t, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, clock)
	multi, err := ratewise.NewMultiKey(l, newLimiter(t, policyAlg, clock))
	if err != nil {
		t.Fatal(err)
	}
	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{policyAlg})
	if err != nil {
		t.Fatal(err)
	}
	keys := []KeyFunc{ByPeer(), ByMethod()}
	newL := func(o ...Option) error { _, err := New(l, o...); return err }
	newM := func(o ...Option) error { _, err := NewMultiKey(multi, keys, o...); return err }
	newS := func(o ...Option) error { _, err := NewStack(set, o...); return err }
	for _, c := range []struct {
		name string
		err  error
	}{
		{"nil limiter", func() error { _, err := New(nil); return err }()},
		{"nil Stack", func() error { _, err := NewStack(nil); return err }()},
		{"nil MultiKey", func() error { _, err := NewMultiKey(nil, keys); return err }()},
		{"one key for two", func() error { _, err := NewMultiKey(multi, keys[:1]); return err }()},
		{"nil KeyFunc", func() error { _, err := NewMultiKey(multi, []KeyFunc{ByPeer(), nil}); return err }()},
		{"WithKey on a MultiKey", newM(WithKey(ByPeer()))},
		{"nil key", newL(WithKey(nil))},
		{"nil hook", newL(WithOnError(nil))},
		{"nil observer", newL(WithObserver(nil))},
		{"nil mode", newL(WithFailureMode(nil))},
		{"negative timeout", newL(WithTimeout(-time.Second))},
		{"fail closed OK", newL(WithFailureMode(FailClosed(codes.OK, time.Second)))},
		{"fail closed Internal", newL(WithFailureMode(FailClosed(codes.Internal, time.Second)))},
		{"ResourceExhausted without a wait", newL(WithFailureMode(FailClosed(codes.ResourceExhausted, 0)))},
		{"negative wait", newL(WithFailureMode(FailClosed(codes.Unavailable, -time.Second)))},
		{"nil fallback", newL(WithFailureMode(Fallback(nil)))},
		{"fallback of another kind", newL(WithFailureMode(Fallback(other)))},
		{"fallback on a MultiKey", newM(WithFailureMode(Fallback(l)))},
		{"fallback on a Stack", newS(WithFailureMode(Fallback(l)))},
		{"no-key code out of range", newL(WithNoKey(codes.Code(17)))},
		{"no quota name", newL(WithQuotaName())},
		{"two names for a Limiter", newL(WithQuotaName("a", "b"))},
		{"empty name", newL(WithQuotaName(""))},
		{"name not ASCII", newL(WithQuotaName("café"))},
		{"three names for two", newM(WithQuotaName("a", "b", "c"))},
		{"a name twice", newM(WithQuotaName("a", "a"))},
	} {
		if !errors.Is(c.err, ratewise.ErrInvalidConfig) {
			t.Errorf("%s: got %v, want ratewise.ErrInvalidConfig", c.name, c.err)
		}
	}
	if _, err := Share(policyAlg, 0); !errors.Is(err, ratewise.ErrInvalidConfig) {
		t.Errorf("Share among 0: got %v, want ratewise.ErrInvalidConfig", err)
	}
}
