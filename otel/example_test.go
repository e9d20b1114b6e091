package ratewiseotel_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

func ExampleNew() {
	// An application passes its meter provider, one with an exporter,
	// or nothing for the global one. A manual reader shows what is
	// recorded.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}

	// One observer serves the limiter and its middleware.
	limiter, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerMinute(2), Burst: 2},
		ratewise.WithObserver(obs.ObserveDecision))
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.New(limiter, httplimit.WithObserver(obs.ObserveDegraded))
	if err != nil {
		panic(err)
	}
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	handler := mw.Handler(app)

	for range 3 {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}

	ctx := context.Background()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name != ratewiseotel.MetricDecisions {
			continue
		}
		for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
			outcome, _ := p.Attributes.Value(ratewiseotel.AttrOutcome)
			alg, _ := p.Attributes.Value(ratewiseotel.AttrAlgorithm)
			lines = append(
				lines,
				fmt.Sprintf("%s{algorithm=%s, outcome=%s} %d", m.Name, alg.AsString(), outcome.AsString(), p.Value),
			)
		}
	}
	slices.Sort(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// ratewise.decisions{algorithm=gcra, outcome=allowed} 2
	// ratewise.decisions{algorithm=gcra, outcome=denied} 1
}

func ExampleObserveClockOffset() {
	// A Redis whose clock is 90 seconds ahead of this process's.
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	m.SetTime(time.Now().Add(90 * time.Second))
	client := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer client.Close()
	rs := storeredis.New(client)

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := ratewiseotel.ObserveClockOffset(rs, ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	defer reg.Unregister()

	// Each collection reads the offset once.
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == ratewiseotel.MetricClockOffset {
			offset := m.Data.(metricdata.Gauge[float64]).DataPoints[0].Value
			fmt.Printf("%s: %.0f %s\n", m.Name, offset, m.Unit)
		}
	}
	// Output:
	// ratewise.store.clock.offset: 90 s
}
