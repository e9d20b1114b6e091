package ratewiseotel_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// Series of the decision counter, spelled as attrs spells them.
func decisionSeries(source, alg string, binding int, outcome string, peek bool) string {
	return fmt.Sprintf(
		"ratewise.algorithm=%s,ratewise.binding=%d,ratewise.outcome=%s,ratewise.peek=%t,ratewise.source=%s",
		alg,
		binding,
		outcome,
		peek,
		source,
	)
}

func errorSeries(source, alg, errType string) string {
	return fmt.Sprintf(
		"error.type=%s,ratewise.algorithm=%s,ratewise.binding=0,ratewise.outcome=error,"+
			"ratewise.peek=false,ratewise.source=%s",
		errType,
		alg,
		source,
	)
}

// Admissions, denials, peeks and errors, of a Limiter and of a Stack, each
// count once under their own attributes, and nowhere else.
func TestDecisionsCountedByOutcome(t *testing.T) {
	ctx := context.Background()
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	clock := newClock()
	mem := storememory.New()

	// 2 a minute: 2 admitted, 1 denied, a peek that would be denied, and
	// 30s later one more admitted.
	l, err := ratewise.New(mem, algorithms.GCRA{Rate: algorithms.PerMinute(2), Burst: 2},
		ratewise.WithObserver(obs.ObserveDecision), ratewise.WithClock(clock), ratewise.WithNamespace("api"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []bool{true, true, false} {
		if res, err := l.Allow(ctx, "alice"); err != nil || res.Allowed != want {
			t.Fatalf("Allow: %+v, %v; want allowed %v", res, err, want)
		}
	}
	if res, err := l.PeekN(ctx, "alice", 1); err != nil || res.Allowed {
		t.Fatalf("Peek: %+v, %v; want a denial", res, err)
	}
	clock.Advance(30 * time.Second)
	if res, err := l.Allow(ctx, "alice"); err != nil || !res.Allowed {
		t.Fatalf("Allow 30s later: %+v, %v; want an admission", res, err)
	}

	// A Stack whose second limit, 1 an hour, binds: admitted, then denied.
	set, err := ratewise.NewStack(mem, []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 5, Window: time.Minute},
		algorithms.SlidingLog{Limit: 1, Window: time.Hour},
	}, ratewise.WithObserver(obs.ObserveDecision), ratewise.WithClock(clock), ratewise.WithNamespace("set"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []bool{true, false} {
		if res, err := set.Allow(ctx, "bob"); err != nil || res.Allowed != want || res.Binding != 1 {
			t.Fatalf("Stack.Allow: %+v, %v; want allowed %v, binding 1", res, err, want)
		}
	}

	// A store that fails, and a caller that gave up.
	broken, err := ratewise.New(
		failingStore{err: fmt.Errorf("%w: connection refused", store.ErrUnavailable)},
		algorithms.FixedWindow{
			Limit:  1,
			Window: time.Second,
		},
		ratewise.WithObserver(obs.ObserveDecision),
		ratewise.WithClock(clock),
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := broken.Allow(ctx, "carol"); err == nil {
		t.Fatal("Allow on a failing store: no error")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := broken.Allow(canceled, "carol"); err == nil {
		t.Fatal("Allow with a canceled context: no error")
	}

	rm := collect(t, reader)
	want := map[string]int64{
		decisionSeries("limiter", "gcra", 0, "allowed", false):      3,
		decisionSeries("limiter", "gcra", 0, "denied", false):       1,
		decisionSeries("limiter", "gcra", 0, "denied", true):        1,
		decisionSeries("stack", "sliding_log", 1, "allowed", false): 1,
		decisionSeries("stack", "sliding_log", 1, "denied", false):  1,
		errorSeries("limiter", "fixed_window", "unavailable"):       1,
		errorSeries("limiter", "fixed_window", "canceled"):          1,
	}
	if got := sums(t, rm, ratewiseotel.MetricDecisions); !maps.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", ratewiseotel.MetricDecisions, got, want)
	}
	wantDurations := map[string]uint64{
		"ratewise.algorithm=gcra,ratewise.outcome=allowed":                              3,
		"ratewise.algorithm=gcra,ratewise.outcome=denied":                               2,
		"ratewise.algorithm=sliding_log,ratewise.outcome=allowed":                       1,
		"ratewise.algorithm=sliding_log,ratewise.outcome=denied":                        1,
		"error.type=unavailable,ratewise.algorithm=fixed_window,ratewise.outcome=error": 1,
		"error.type=canceled,ratewise.algorithm=fixed_window,ratewise.outcome=error":    1,
	}
	if got := histogramCounts(t, rm, ratewiseotel.MetricStoreDuration); !maps.Equal(got, wantDurations) {
		t.Errorf("%s counts:\n got %v\nwant %v", ratewiseotel.MetricStoreDuration, got, wantDurations)
	}
}

// Each class of error is told apart, and a failure of no known class is
// "_OTHER", not a class it is not.
func TestErrorTypes(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"unavailable", fmt.Errorf("storeredis: %w: i/o timeout", store.ErrUnavailable), "unavailable"},
		{"deadline", fmt.Errorf("storeredis: %w: read tcp", context.DeadlineExceeded), "deadline_exceeded"},
		{"canceled", context.Canceled, "canceled"},
		{"unsupported", fmt.Errorf("%w: no script", store.ErrUnsupported), "unsupported"},
		{"other", algorithms.ErrInvalidTime, "_OTHER"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader, mp := newReader(t)
			obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
			if err != nil {
				t.Fatal(err)
			}
			obs.ObserveDecision(
				context.Background(),
				ratewise.DecisionEvent{Algorithm: algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
					Key: "k", Cost: 1, Err: tt.err,
				},
			)
			want := map[string]int64{errorSeries("limiter", "gcra", tt.want): 1}
			if got := sums(t, collect(t, reader), ratewiseotel.MetricDecisions); !maps.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

// The store's duration lands in the bucket that holds it, in seconds, in
// buckets from 100µs to 1s.
func TestStoreDurationBuckets(t *testing.T) {
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	alg := algorithms.TokenBucket{Refill: algorithms.PerSecond(1), Capacity: 1}
	for _, d := range []time.Duration{3 * time.Millisecond, 200 * time.Millisecond, 50 * time.Microsecond} {
		obs.ObserveDecision(context.Background(), ratewise.DecisionEvent{Algorithm: alg, Key: "k", Cost: 1,
			Result: ratewise.Result{Allowed: true}, StoreLatency: d,
		})
	}
	m, ok := find(collect(t, reader), ratewiseotel.MetricStoreDuration)
	if !ok {
		t.Fatalf("no %s", ratewiseotel.MetricStoreDuration)
	}
	if got, want := m.Unit, "s"; got != want {
		t.Errorf("unit: got %q, want %q", got, want)
	}
	h := m.Data.(metricdata.Histogram[float64])
	if got, want := len(h.DataPoints), 1; got != want {
		t.Fatalf("data points: got %d, want %d", got, want)
	}
	p := h.DataPoints[0]
	bounds := []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
	if !slices.Equal(p.Bounds, bounds) {
		t.Errorf("bounds: got %v, want %v", p.Bounds, bounds)
	}
	// 50µs in (0, 100µs], 3ms in (2.5ms, 5ms], 200ms in (100ms, 250ms].
	want := make([]uint64, len(bounds)+1)
	want[0], want[5], want[10] = 1, 1, 1
	if !slices.Equal(p.BucketCounts, want) {
		t.Errorf("bucket counts: got %v, want %v", p.BucketCounts, want)
	}
	if got, want := p.Sum, 0.20305; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("sum: got %v s, want %v s", got, want)
	}
}

// The metrics carry their units, which exporters turn into suffixes.
func TestUnits(t *testing.T) {
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	obs.ObserveDecision(
		ctx,
		ratewise.DecisionEvent{
			Algorithm: algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		},
	)
	obs.ObserveDegraded(
		ctx,
		httplimit.DegradedEvent{Mode: httplimit.ModeFailOpen, Err: context.DeadlineExceeded, Quota: "default"},
	)
	rm := collect(t, reader)
	for name, unit := range map[string]string{
		ratewiseotel.MetricDecisions:     "{decision}",
		ratewiseotel.MetricStoreDuration: "s",
		ratewiseotel.MetricDegraded:      "{request}",
	} {
		m, ok := find(rm, name)
		if !ok {
			t.Errorf("no %s", name)
			continue
		}
		if m.Unit != unit {
			t.Errorf("%s: unit %q, want %q", name, m.Unit, unit)
		}
	}
}

// Every degraded answer of httplimit counts once, by policy, reason,
// quota and what the policy did.
func TestDegradedCounted(t *testing.T) {
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	down := failingStore{err: fmt.Errorf("%w: connection refused", store.ErrUnavailable)}
	alg := algorithms.SlidingLog{Limit: 10, Window: time.Minute}
	quiet := httplimit.WithOnError(func(*http.Request, error) {})
	serve := func(t *testing.T, h http.Handler, path string, n int, wantCode int) {
		t.Helper()
		for range n {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
			if w.Code != wantCode {
				t.Fatalf("GET %s: %d, want %d", path, w.Code, wantCode)
			}
		}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})

	// Fail open on a store that is down, twice.
	l, err := ratewise.New(down, alg, ratewise.WithObserver(obs.ObserveDecision))
	if err != nil {
		t.Fatal(err)
	}
	open, err := httplimit.New(l, httplimit.WithFailureMode(httplimit.FailOpen()), httplimit.WithQuotaName("search"),
		httplimit.WithObserver(obs.ObserveDegraded), quiet)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, open.Handler(ok), "/search", 2, http.StatusOK)

	// Fail closed (the default) on a route.
	closed, err := httplimit.New(l, httplimit.WithObserver(obs.ObserveDegraded), quiet)
	if err != nil {
		t.Fatal(err)
	}
	login, err := closed.Route("login", algorithms.SlidingLog{Limit: 5, Window: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	serve(t, login.Handler(ok), "/login", 1, http.StatusServiceUnavailable)

	// Fail open on a store slower than the decision timeout.
	slow, err := ratewise.New(hangingStore{}, alg, ratewise.WithObserver(obs.ObserveDecision))
	if err != nil {
		t.Fatal(err)
	}
	timeout, err := httplimit.New(
		slow,
		httplimit.WithFailureMode(httplimit.FailOpen()),
		httplimit.WithTimeout(time.Millisecond),
		httplimit.WithObserver(obs.ObserveDegraded),
		quiet,
	)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, timeout.Handler(ok), "/", 1, http.StatusOK)

	rm := collect(t, reader)
	want := map[string]int64{
		"ratewise.failure_mode=fail_open,ratewise.outcome=allowed,ratewise.quota=search,ratewise.reason=unavailable": 2,
		"ratewise.failure_mode=fail_closed,ratewise.outcome=denied,ratewise.quota=login,ratewise.reason=unavailable": 1,
		"ratewise.failure_mode=fail_open,ratewise.outcome=allowed,ratewise.quota=default,ratewise.reason=timeout":    1,
	}
	if got := sums(t, rm, ratewiseotel.MetricDegraded); !maps.Equal(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", ratewiseotel.MetricDegraded, got, want)
	}
	// The limiters reported the same failures as decisions.
	wantDecisions := map[string]int64{
		errorSeries("limiter", "sliding_log", "unavailable"):       3,
		errorSeries("limiter", "sliding_log", "deadline_exceeded"): 1,
	}
	if got := sums(t, rm, ratewiseotel.MetricDecisions); !maps.Equal(got, wantDecisions) {
		t.Errorf("%s:\n got %v\nwant %v", ratewiseotel.MetricDecisions, got, wantDecisions)
	}
}

// WithLimitAttribute tells apart two tiers of one algorithm by their
// parameters.
func TestLimitAttribute(t *testing.T) {
	ctx := context.Background()
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp), ratewiseotel.WithLimitAttribute())
	if err != nil {
		t.Fatal(err)
	}
	free := algorithms.SlidingWindow{Limit: 1, Window: time.Hour, SubWindows: 60}
	paid := free
	paid.Limit = 100
	l, err := ratewise.New(
		storememory.New(),
		free,
		ratewise.WithObserver(obs.ObserveDecision),
		ratewise.WithClock(newClock()),
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []struct {
		key string
		alg algorithms.Algorithm
	}{{"alice", free}, {"alice", free}, {"bob", paid}} {
		if _, err := l.AllowWith(ctx, call.key, call.alg, 1); err != nil {
			t.Fatal(err)
		}
	}
	series := func(alg algorithms.Algorithm, outcome string) string {
		return fmt.Sprintf(
			"ratewise.algorithm=sliding_window,ratewise.binding=0,ratewise.limit=%s,ratewise.outcome=%s,"+
				"ratewise.peek=false,ratewise.source=limiter",
			alg.String(),
			outcome,
		)
	}
	want := map[string]int64{
		series(free, "allowed"): 1,
		series(free, "denied"):  1,
		series(paid, "allowed"): 1,
	}
	if got := sums(t, collect(t, reader), ratewiseotel.MetricDecisions); !maps.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

// WithAttributes labels every metric of New's.
func TestWithAttributes(t *testing.T) {
	ctx := context.Background()
	reader, mp := newReader(t)
	obs, err := ratewiseotel.New(
		ratewiseotel.WithMeterProvider(mp),
		ratewiseotel.WithAttributes(attribute.String("ratewise.store", "sessions")),
	)
	if err != nil {
		t.Fatal(err)
	}
	alg := algorithms.FixedWindow{Limit: 1, Window: time.Second}
	obs.ObserveDecision(ctx, ratewise.DecisionEvent{Algorithm: alg, Result: ratewise.Result{Allowed: true}})
	obs.ObserveDegraded(
		ctx,
		httplimit.DegradedEvent{Mode: httplimit.ModeFallback, Err: store.ErrUnavailable, Quota: "q"},
	)
	rm := collect(t, reader)
	if got, want := sums(t, rm, ratewiseotel.MetricDecisions), map[string]int64{
		"ratewise.algorithm=fixed_window,ratewise.binding=0,ratewise.outcome=allowed,ratewise.peek=false," +
			"ratewise.source=limiter,ratewise.store=sessions": 1,
	}; !maps.Equal(got, want) {
		t.Errorf("decisions: got %v, want %v", got, want)
	}
	if got, want := histogramCounts(t, rm, ratewiseotel.MetricStoreDuration), map[string]uint64{
		"ratewise.algorithm=fixed_window,ratewise.outcome=allowed,ratewise.store=sessions": 1,
	}; !maps.Equal(got, want) {
		t.Errorf("durations: got %v, want %v", got, want)
	}
	if got, want := sums(t, rm, ratewiseotel.MetricDegraded), map[string]int64{
		"ratewise.failure_mode=fallback,ratewise.outcome=denied,ratewise.quota=q,ratewise.reason=unavailable," +
			"ratewise.store=sessions": 1,
	}; !maps.Equal(got, want) {
		t.Errorf("degraded: got %v, want %v", got, want)
	}
}

// Without WithMeterProvider, the global meter provider records.
func TestGlobalMeterProvider(t *testing.T) {
	reader, mp := newReader(t)
	prev := otel.GetMeterProvider()
	otel.SetMeterProvider(mp)
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	obs, err := ratewiseotel.New()
	if err != nil {
		t.Fatal(err)
	}
	obs.ObserveDecision(
		context.Background(),
		ratewise.DecisionEvent{
			Algorithm: algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
		},
	)
	want := map[string]int64{decisionSeries("limiter", "gcra", 0, "denied", false): 1}
	if got := sums(t, collect(t, reader), ratewiseotel.MetricDecisions); !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
