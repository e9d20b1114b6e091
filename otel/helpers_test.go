package ratewiseotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// testStart is the time every test clock starts at.
var testStart = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// newReader returns a manual reader and a meter provider that feeds it,
// shut down when the test ends.
func newReader(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return r, mp
}

// collect returns what r holds now.
func collect(t *testing.T, r *sdkmetric.ManualReader) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatalf("Collect: %v", err)
	}
	return rm
}

// find returns the metric named name, if rm has it.
func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// attrs spells a set as "k=v,k=v", sorted by key.
func attrs(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// sums returns the int64 sum named name, by attribute set; nil if rm has
// no such metric.
func sums(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]int64 {
	t.Helper()
	m, ok := find(rm, name)
	if !ok {
		return nil
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s: %T, want an int64 sum", name, m.Data)
	}
	if !sum.IsMonotonic {
		t.Errorf("%s is not monotonic", name)
	}
	out := make(map[string]int64)
	for _, p := range sum.DataPoints {
		out[attrs(p.Attributes)] = p.Value
	}
	return out
}

// gauges returns the float64 gauge named name, by attribute set; nil if rm
// has no such metric.
func gauges(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]float64 {
	t.Helper()
	m, ok := find(rm, name)
	if !ok {
		return nil
	}
	g, ok := m.Data.(metricdata.Gauge[float64])
	if !ok {
		t.Fatalf("%s: %T, want a float64 gauge", name, m.Data)
	}
	out := make(map[string]float64)
	for _, p := range g.DataPoints {
		out[attrs(p.Attributes)] = p.Value
	}
	return out
}

// histogramCounts returns how many samples the histogram named name holds,
// by attribute set.
func histogramCounts(t *testing.T, rm metricdata.ResourceMetrics, name string) map[string]uint64 {
	t.Helper()
	m, ok := find(rm, name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s: %T, want a float64 histogram", name, m.Data)
	}
	out := make(map[string]uint64)
	for _, p := range h.DataPoints {
		out[attrs(p.Attributes)] = p.Count
	}
	return out
}

// failingStore fails every call with err, or with ctx's error once ctx
// has ended.
type failingStore struct{ err error }

func (s failingStore) Decide(
	ctx context.Context,
	_ store.Key,
	_ algorithms.Algorithm,
	_ time.Time,
	_ int64,
) (algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err
	}
	return algorithms.Result{}, s.err
}

func (s failingStore) Reset(ctx context.Context, _ store.Key, _ algorithms.Algorithm) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.err
}

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

// hangingStore answers nothing until ctx ends, then returns its error: a
// store slower than any timeout.
type hangingStore struct {
	store.Store // nil: only Decide and Reset are called
}

func (hangingStore) Decide(
	ctx context.Context,
	_ store.Key,
	_ algorithms.Algorithm,
	_ time.Time,
	_ int64,
) (algorithms.Result, error) {
	<-ctx.Done()
	return algorithms.Result{}, ctx.Err()
}

func (hangingStore) Reset(ctx context.Context, _ store.Key, _ algorithms.Algorithm) error {
	<-ctx.Done()
	return ctx.Err()
}

// newClock returns a manual clock at testStart.
func newClock() *ratewisetest.Clock { return ratewisetest.NewClock(testStart) }
