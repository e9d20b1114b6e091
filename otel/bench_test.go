package ratewiseotel

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
)

// benchEvents are the decisions the benchmarks observe in turn: four
// attribute sets.
func benchEvents() []ratewise.DecisionEvent {
	gcra := algorithms.GCRA{Rate: algorithms.PerSecond(100), Burst: 100}
	log := algorithms.SlidingLog{Limit: 10, Window: time.Minute}
	allowed := ratewise.Result{Allowed: true, Limit: 100, Remaining: 42}
	denied := ratewise.Result{Limit: 100, RetryAfter: 10 * time.Millisecond}
	return []ratewise.DecisionEvent{
		{
			Algorithm:    gcra,
			Key:          "user-1",
			Cost:         1,
			Result:       allowed,
			StoreLatency: 180 * time.Microsecond,
		},
		{
			Algorithm:    gcra,
			Key:          "user-2",
			Cost:         1,
			Result:       denied,
			StoreLatency: 150 * time.Microsecond,
		},
		{
			Algorithm:    gcra,
			Key:          "user-3",
			Cost:         1,
			Peek:         true,
			Result:       allowed,
			StoreLatency: 90 * time.Microsecond,
		},
		{
			Stack:        true,
			Algorithm:    log,
			Binding:      1,
			Key:          "user-4",
			Cost:         1,
			Result:       denied,
			StoreLatency: 300 * time.Microsecond,
		},
	}
}

// BenchmarkObserveDecision is the cost an Observer adds to each decision:
// with the SDK (a manual reader that never collects, so only recording is
// timed) and with the no-op provider, without a span and on a recording
// one.
func BenchmarkObserveDecision(b *testing.B) {
	events := benchEvents()
	tp := sdktrace.NewTracerProvider()
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	for _, bc := range []struct {
		name string
		opts func() []Option
		ctx  func(*testing.B) context.Context
	}{
		{"provider=sdk/span=none", func() []Option {
			return []Option{WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))}
		}, func(*testing.B) context.Context { return context.Background() }},
		{"provider=noop/span=none", func() []Option {
			return []Option{WithMeterProvider(noop.NewMeterProvider())}
		}, func(*testing.B) context.Context { return context.Background() }},
		{"provider=sdk/span=recording", func() []Option {
			return []Option{WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))}
		}, func(b *testing.B) context.Context {
			ctx, span := tp.Tracer("bench").Start(context.Background(), "request")
			b.Cleanup(func() { span.End() })
			return ctx
		}},
	} {
		for _, mode := range []string{"serial", "parallel"} {
			if bc.name == "provider=sdk/span=recording" && mode == "parallel" {
				continue // one span's events, appended under its lock: a benchmark of the SDK
			}
			b.Run(bc.name+"/"+mode, func(b *testing.B) {
				o, err := New(bc.opts()...)
				if err != nil {
					b.Fatal(err)
				}
				ctx := bc.ctx(b)
				b.ReportAllocs()
				if mode == "serial" {
					for i := 0; b.Loop(); i++ {
						o.ObserveDecision(ctx, events[i%len(events)])
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							o.ObserveDecision(ctx, events[i%len(events)])
						}
					})
				}
				b.StopTimer()
				if got, want := o.decisionSets.len(), min(b.N, len(events)); got != want {
					b.Fatalf("attribute sets: got %d, want %d", got, want)
				}
			})
		}
	}
}

// An observed decision allocates nothing, once its attribute set is built,
// when its context has no recording span.
func TestObserveDecisionAllocatesNothing(t *testing.T) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o, err := New(WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	events := benchEvents()
	for _, e := range events {
		o.ObserveDecision(ctx, e)
	}
	i := 0
	if got := testing.AllocsPerRun(1000, func() {
		o.ObserveDecision(ctx, events[i%len(events)])
		i++
	}); got != 0 {
		t.Errorf("allocations per observed decision: got %v, want 0", got)
	}
}
