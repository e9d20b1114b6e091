package ratewiseotel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// newTracer returns a tracer provider that records every span in the
// returned recorder.
func newTracer(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, sr
}

// kvString spells an event's or a span's attributes as attrs does.
func kvString(kv []attribute.KeyValue) string { return attrs(attribute.NewSet(kv...)) }

// A decision in the context of a recording span adds an event to it with
// the metrics' attributes and the decision's cost and result; a degraded
// answer adds one with the degraded counter's.
func TestSpanEvents(t *testing.T) {
	tp, sr := newTracer(t)
	_, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ratewise.New(storememory.New(), algorithms.FixedWindow{Limit: 3, Window: time.Minute},
		ratewise.WithObserver(obs.ObserveDecision), ratewise.WithClock(newClock()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := l.AllowN(ctx, "alice", 2); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AllowN(ctx, "alice", 2); err != nil {
		t.Fatal(err)
	}
	obs.ObserveDegraded(
		ctx,
		httplimit.DegradedEvent{Mode: httplimit.ModeFailClosed, Err: context.DeadlineExceeded, Quota: "default"},
	)
	span.End()

	ended := sr.Ended()
	if got, want := len(ended), 1; got != want {
		t.Fatalf("spans: got %d, want %d (no span of its own by default)", got, want)
	}
	events := ended[0].Events()
	var got []string
	for _, e := range events {
		got = append(got, e.Name+" "+kvString(e.Attributes))
	}
	// The window starts at testStart, so the denial waits a minute.
	want := []string{
		"ratewise.decision " +
			"ratewise.algorithm=fixed_window,ratewise.binding=0,ratewise.cost=2,ratewise.outcome=allowed," +
			"ratewise.peek=false,ratewise.remaining=1,ratewise.retry_after=0,ratewise.source=limiter",
		"ratewise.decision " +
			"ratewise.algorithm=fixed_window,ratewise.binding=0,ratewise.cost=2,ratewise.outcome=denied," +
			"ratewise.peek=false,ratewise.remaining=1,ratewise.retry_after=60,ratewise.source=limiter",
		"ratewise.degraded " +
			"ratewise.failure_mode=fail_closed,ratewise.outcome=denied,ratewise.quota=default,ratewise.reason=timeout",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

// A failed decision's event has its error's class and no result.
func TestSpanEventOfError(t *testing.T) {
	tp, sr := newTracer(t)
	_, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	obs.ObserveDecision(
		ctx,
		ratewise.DecisionEvent{
			Stack:     true,
			Algorithm: algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
			Key:       "k",
			Cost:      1,
			Err:       store.ErrUnavailable,
		},
	)
	span.End()
	events := sr.Ended()[0].Events()
	if got, want := len(events), 1; got != want {
		t.Fatalf("events: got %d, want %d", got, want)
	}
	if got, want := kvString(events[0].Attributes), "error.type=unavailable,ratewise.algorithm=gcra,ratewise.binding=0,"+
		"ratewise.cost=1,ratewise.outcome=error,ratewise.peek=false,ratewise.source=stack"; got != want {
		t.Errorf("attributes:\n got %s\nwant %s", got, want)
	}
}

// WithoutSpanEvents leaves the caller's span alone.
func TestWithoutSpanEvents(t *testing.T) {
	tp, sr := newTracer(t)
	_, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp), ratewiseotel.WithoutSpanEvents())
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	obs.ObserveDecision(
		ctx,
		ratewise.DecisionEvent{
			Algorithm: algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1},
			Result:    ratewise.Result{Allowed: true},
		},
	)
	obs.ObserveDegraded(
		ctx,
		httplimit.DegradedEvent{
			Mode:    httplimit.ModeFailOpen,
			Err:     context.DeadlineExceeded,
			Quota:   "default",
			Allowed: true,
		},
	)
	span.End()
	if events := sr.Ended()[0].Events(); len(events) != 0 {
		t.Errorf("events: got %v, want none", events)
	}
}

// WithDecisionSpans makes a child span per decision in a trace, timed by
// the store's latency, in place of the event; a failed decision's span has
// an error status naming its class.
func TestDecisionSpans(t *testing.T) {
	tp, sr := newTracer(t)
	_, mp := newReader(t)
	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp), ratewiseotel.WithDecisionSpans(tp))
	if err != nil {
		t.Fatal(err)
	}
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10}
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	obs.ObserveDecision(
		ctx,
		ratewise.DecisionEvent{Algorithm: alg, Key: "k", Cost: 1,
			Result: ratewise.Result{Allowed: true, Remaining: 9}, StoreLatency: 7 * time.Millisecond},
	)
	obs.ObserveDecision(ctx, ratewise.DecisionEvent{Algorithm: alg, Key: "k", Cost: 1,
		StoreLatency: 3 * time.Millisecond, Err: fmt.Errorf("%w: connection reset", store.ErrUnavailable)})
	parent.End()
	// A decision outside any trace makes no span: no root span per
	// decision.
	obs.ObserveDecision(
		context.Background(),
		ratewise.DecisionEvent{Algorithm: alg, Key: "k", Cost: 1},
	)

	ended := sr.Ended()
	if got, want := len(ended), 3; got != want {
		t.Fatalf("spans: got %d, want %d", got, want)
	}
	for i, tt := range []struct {
		latency time.Duration
		attrs   string
		status  sdktrace.Status
	}{
		{7 * time.Millisecond,
			"ratewise.algorithm=gcra,ratewise.binding=0,ratewise.cost=1,ratewise.outcome=allowed,ratewise.peek=false," +
				"ratewise.remaining=9,ratewise.retry_after=0,ratewise.source=limiter",
			sdktrace.Status{Code: codes.Unset}},
		{3 * time.Millisecond,
			"error.type=unavailable,ratewise.algorithm=gcra,ratewise.binding=0,ratewise.cost=1,ratewise.outcome=error," +
				"ratewise.peek=false,ratewise.source=limiter",
			sdktrace.Status{Code: codes.Error, Description: "unavailable"}},
	} {
		s := ended[i]
		if s.Name() != ratewiseotel.EventDecision || s.SpanKind() != trace.SpanKindInternal {
			t.Errorf("span %d: %s %v, want an internal %s", i, s.Name(), s.SpanKind(), ratewiseotel.EventDecision)
		}
		if s.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d: parent %v, want the request's span", i, s.Parent().SpanID())
		}
		if got := s.EndTime().Sub(s.StartTime()); got != tt.latency {
			t.Errorf("span %d: lasts %v, want the store's latency %v", i, got, tt.latency)
		}
		if got := kvString(s.Attributes()); got != tt.attrs {
			t.Errorf("span %d: attributes\n got %s\nwant %s", i, got, tt.attrs)
		}
		if s.Status() != tt.status {
			t.Errorf("span %d: status %+v, want %+v", i, s.Status(), tt.status)
		}
	}
	if events := ended[2].Events(); len(events) != 0 {
		t.Errorf("request span: events %v, want none beside the decision spans", events)
	}
}
