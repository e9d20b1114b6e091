package ratewiseotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// keySpy passes events on to an Observer and counts those that carried
// the key, so that a test knows the key was there to leak.
type keySpy struct {
	*ratewiseotel.Observer
	key  string
	seen atomic.Int64
}

func (s *keySpy) ObserveDecision(ctx context.Context, e ratewise.DecisionEvent) {
	if e.Key == s.key {
		s.seen.Add(1)
	}
	s.Observer.ObserveDecision(ctx, e)
}

// No metric, span or span event names the key, in any attribute's key or
// value, whatever the decision and whatever the options.
func TestKeyNeverAnAttribute(t *testing.T) {
	const key = "alice@example.com/7f3a9c"
	for _, tt := range []struct {
		name string
		opts []ratewiseotel.Option
	}{
		{"defaults", nil},
		{"spans and limits", []ratewiseotel.Option{
			ratewiseotel.WithLimitAttribute(),
			ratewiseotel.WithAttributes(attribute.String("ratewise.store", "sessions")),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reader, mp := newReader(t)
			tp, sr := newTracer(t)
			opts := append([]ratewiseotel.Option{ratewiseotel.WithMeterProvider(mp)}, tt.opts...)
			if tt.name != "defaults" {
				opts = append(opts, ratewiseotel.WithDecisionSpans(tp))
			}
			obs, err := ratewiseotel.New(opts...)
			if err != nil {
				t.Fatal(err)
			}
			spy := &keySpy{Observer: obs, key: key}
			ctx, span := tp.Tracer("test").Start(context.Background(), "request")
			mem := storememory.New()
			clock := newClock()

			l, err := ratewise.New(mem, algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
				ratewise.WithObserver(spy.ObserveDecision), ratewise.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if _, err := l.Allow(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.PeekN(ctx, key, 2); err != nil {
				t.Fatal(err)
			}
			r, err := l.ReserveN(ctx, key, 1, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			r.Cancel(ctx)
			set, err := ratewise.NewStack(mem, []algorithms.Algorithm{
				algorithms.FixedWindow{Limit: 1, Window: time.Second},
				algorithms.SlidingLog{Limit: 5, Window: time.Hour},
			}, ratewise.WithObserver(spy.ObserveDecision), ratewise.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := set.Allow(ctx, key); err != nil {
					t.Fatal(err)
				}
			}
			down := failingStore{err: fmt.Errorf("%w: %s: connection refused", store.ErrUnavailable, key)}
			broken, err := ratewise.New(
				down,
				algorithms.FixedWindow{Limit: 1, Window: time.Second},
				ratewise.WithObserver(spy.ObserveDecision),
			)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := broken.Allow(ctx, key); err == nil {
				t.Fatal("no error from a failing store")
			}
			mw, err := httplimit.New(
				broken,
				httplimit.WithObserver(obs.ObserveDegraded),
				httplimit.WithOnError(func(*http.Request, error) {}),
				httplimit.WithKey(
					httplimit.ByUser(func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), true }),
				),
			)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequestWithContext(ctx, "GET", "/"+key, nil)
			req.Header.Set("X-User", key)
			mw.Handler(http.NotFoundHandler()).ServeHTTP(httptest.NewRecorder(), req)
			span.End()

			if got := spy.seen.Load(); got < 8 {
				t.Fatalf("decisions that carried the key: %d, want at least 8", got)
			}
			check := func(where string, kvs []attribute.KeyValue) {
				t.Helper()
				for _, kv := range kvs {
					if strings.Contains(string(kv.Key), key) || strings.Contains(kv.Value.Emit(), key) {
						t.Errorf("%s: attribute %s=%s names the key", where, kv.Key, kv.Value.Emit())
					}
				}
			}
			rm := collect(t, reader)
			points := 0
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					for _, set := range dataPointAttributes(t, m) {
						check(m.Name, set.ToSlice())
						points++
					}
				}
			}
			if points < 8 {
				t.Errorf("checked %d data points, want at least 8", points)
			}
			events := 0
			for _, s := range sr.Ended() {
				check("span "+s.Name(), s.Attributes())
				if strings.Contains(s.Name(), key) || strings.Contains(s.Status().Description, key) {
					t.Errorf("span %q, status %q names the key", s.Name(), s.Status().Description)
				}
				for _, e := range s.Events() {
					check("event "+e.Name, e.Attributes)
					events++
				}
			}
			if got := len(sr.Ended()) - 1 + events; got < 9 {
				t.Errorf("checked %d spans and events, want at least 9", got)
			}
		})
	}
}

// dataPointAttributes returns the attribute set of each of m's data points.
func dataPointAttributes(t *testing.T, m metricdata.Metrics) []attribute.Set {
	t.Helper()
	var sets []attribute.Set
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	case metricdata.Gauge[float64]:
		for _, p := range d.DataPoints {
			sets = append(sets, p.Attributes)
		}
	default:
		t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
	}
	return sets
}
