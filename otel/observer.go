package ratewiseotel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/store"
)

var (
	_ func(context.Context, ratewise.DecisionEvent)  = (*Observer)(nil).ObserveDecision
	_ func(context.Context, httplimit.DegradedEvent) = (*Observer)(nil).ObserveDegraded
)

// Observer records every decision of the limiters and Stacks its
// ObserveDecision is given to (ratewise.WithObserver), and every degraded
// answer of the httplimit middlewares its ObserveDegraded is given to
// (httplimit.WithObserver), as OpenTelemetry
// metrics, and as events on the span in the decision's context. One
// Observer may serve any number of limiters, Sets and middlewares. Create
// it with New; it is safe for simultaneous use by many goroutines.
//
// Its metrics are labelled only with values that are few and fixed (the
// package documentation lists them), never with a decision's key.
type Observer struct {
	decisions metric.Int64Counter
	duration  metric.Float64Histogram
	degraded  metric.Int64Counter
	// tracer makes a span per decision; nil unless WithDecisionSpans.
	tracer trace.Tracer
	events bool
	limit  bool
	// attrs are WithAttributes', first in every set, so ours win a clash.
	attrs []attribute.KeyValue

	decisionSets cache[decisionKey, decisionAttrs]
	degradedSets cache[degradedKey, degradedAttrs]
}

// durationBuckets are the bucket boundaries, in seconds, of the
// ratewise.store.duration histogram: from 100µs, a decision in memory or
// on a Redis next door, to 1s, past any sensible decision timeout.
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}

// New returns an Observer that records with the global meter provider, or
// WithMeterProvider's, and adds events to the caller's spans. It fails
// only when the meter provider refuses an instrument.
func New(opts ...Option) (*Observer, error) {
	c := newConfig(opts)
	meter := c.meters.Meter(ScopeName)
	decisions, err1 := meter.Int64Counter(MetricDecisions,
		metric.WithUnit("{decision}"),
		metric.WithDescription("Rate-limiting decisions the store made, by outcome."))
	duration, err2 := meter.Float64Histogram(MetricStoreDuration,
		metric.WithUnit("s"),
		metric.WithDescription("How long the store took to make a rate-limiting decision."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	degraded, err3 := meter.Int64Counter(MetricDegraded,
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests the failure mode answered because the rate-limit store failed or timed out."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("ratewiseotel: %w", err)
	}
	o := &Observer{
		decisions: decisions,
		duration:  duration,
		degraded:  degraded,
		events:    !c.noEvents,
		limit:     c.limit,
		attrs:     c.attrs,
	}
	if c.tracers != nil {
		o.tracer = c.tracers.Tracer(ScopeName)
	}
	return o, nil
}

// decisionKey tells apart decisions that are labelled differently. It
// holds the algorithm's kind, a pointer, rather than its name, so that
// hashing it is cheap.
type decisionKey struct {
	kind    *algorithms.Kind     // nil for a nil Algorithm
	limit   algorithms.Algorithm // nil unless WithLimitAttribute
	source  string
	binding int
	outcome outcome
	errType errorClass // errNone without an error
	peek    bool
}

// An outcome is a value of AttrOutcome.
type outcome uint8

const (
	denied outcome = iota
	allowed
	failed
)

var outcomes = [...]string{denied: outcomeDenied, allowed: outcomeAllowed, failed: outcomeError}

// decisionAttrs are a decisionKey's attributes, built once.
type decisionAttrs struct {
	count    []metric.AddOption
	duration []metric.RecordOption
	// event is count's attributes, shared: copy before appending.
	event   []attribute.KeyValue
	errType string
}

// ObserveDecision counts e, records the store's duration, and adds an
// event named "ratewise.decision" to the span in ctx if it is recording
// (or makes a span, with WithDecisionSpans). Give it to
// ratewise.WithObserver.
//
// The attribute sets are built the first time each combination of
// labels is met and kept, so an observed decision allocates nothing when
// ctx's span is not recording.
func (o *Observer) ObserveDecision(ctx context.Context, e ratewise.DecisionEvent) {
	k := decisionKey{source: "limiter", binding: e.Binding, peek: e.Peek}
	if e.Stack {
		k.source = "stack"
	}
	if e.Algorithm != nil {
		k.kind = e.Algorithm.Kind()
		if o.limit {
			k.limit = e.Algorithm
		}
	}
	switch {
	case e.Err != nil:
		k.outcome, k.errType = failed, classify(e.Err)
	case e.Result.Allowed:
		k.outcome = allowed
	}
	a, ok := o.decisionSets.load(k)
	if !ok {
		a = o.decisionSets.store(k, o.decisionAttrs(k))
	}
	o.decisions.Add(ctx, 1, a.count...)
	o.duration.Record(ctx, e.StoreLatency.Seconds(), a.duration...)
	if o.tracer != nil {
		if trace.SpanContextFromContext(ctx).IsValid() {
			o.decisionSpan(ctx, e, a)
		}
		return
	}
	if !o.events {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventDecision, trace.WithAttributes(eventAttrs(a.event, e)...))
	}
}

// decisionAttrs builds k's attributes.
func (o *Observer) decisionAttrs(k decisionKey) *decisionAttrs {
	alg := "unknown"
	if k.kind != nil {
		alg = k.kind.String()
	}
	count := append([]attribute.KeyValue(nil), o.attrs...)
	count = append(count,
		AttrSource.String(k.source),
		AttrAlgorithm.String(alg),
		AttrBinding.Int(k.binding),
		AttrOutcome.String(outcomes[k.outcome]),
		AttrPeek.Bool(k.peek))
	duration := append([]attribute.KeyValue(nil), o.attrs...)
	duration = append(duration, AttrAlgorithm.String(alg), AttrOutcome.String(outcomes[k.outcome]))
	if k.limit != nil {
		count = append(count, AttrLimit.String(k.limit.String()))
		duration = append(duration, AttrLimit.String(k.limit.String()))
	}
	if k.errType != errNone {
		count = append(count, AttrErrorType.String(k.errType.String()))
		duration = append(duration, AttrErrorType.String(k.errType.String()))
	}
	countSet := attribute.NewSet(count...)
	return &decisionAttrs{
		count:    []metric.AddOption{metric.WithAttributeSet(countSet)},
		duration: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(duration...))},
		event:    countSet.ToSlice(),
		errType:  k.errType.String(),
	}
}

// eventAttrs returns a decision's span attributes: base, the bounded
// ones, and its cost and result.
func eventAttrs(base []attribute.KeyValue, e ratewise.DecisionEvent) []attribute.KeyValue {
	kv := make([]attribute.KeyValue, len(base), len(base)+3)
	copy(kv, base)
	kv = append(kv, AttrCost.Int64(e.Cost))
	if e.Err == nil {
		kv = append(kv, AttrRemaining.Int64(e.Result.Remaining), AttrRetryAfter.Float64(e.Result.RetryAfter.Seconds()))
	}
	return kv
}

// decisionSpan makes e's span, which ends now and started StoreLatency
// ago. Its status carries the error's class, not its message, which may
// name the key.
func (o *Observer) decisionSpan(ctx context.Context, e ratewise.DecisionEvent, a *decisionAttrs) {
	end := time.Now()
	_, span := o.tracer.Start(ctx, EventDecision,
		trace.WithTimestamp(end.Add(-e.StoreLatency)),
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(eventAttrs(a.event, e)...))
	if e.Err != nil {
		span.SetStatus(codes.Error, a.errType)
	}
	span.End(trace.WithTimestamp(end))
}

// degradedKey tells apart degraded answers that are labelled differently.
type degradedKey struct {
	policy, reason, quota string
	allowed               bool
}

// degradedAttrs are a degradedKey's attributes, built once.
type degradedAttrs struct {
	count []metric.AddOption
	event []attribute.KeyValue
}

// ObserveDegraded counts e and adds an event named "ratewise.degraded" to
// the span in ctx if it is recording. Give it to httplimit.WithObserver.
func (o *Observer) ObserveDegraded(ctx context.Context, e httplimit.DegradedEvent) {
	k := degradedKey{policy: e.Mode, reason: "unavailable", quota: e.Quota, allowed: e.Allowed}
	if errors.Is(e.Err, context.DeadlineExceeded) {
		k.reason = "timeout"
	}
	a, ok := o.degradedSets.load(k)
	if !ok {
		a = o.degradedSets.store(k, o.degradedAttrs(k))
	}
	o.degraded.Add(ctx, 1, a.count...)
	if !o.events {
		return
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent(EventDegraded, trace.WithAttributes(a.event...))
	}
}

// degradedAttrs builds k's attributes.
func (o *Observer) degradedAttrs(k degradedKey) *degradedAttrs {
	outcome := outcomeDenied
	if k.allowed {
		outcome = outcomeAllowed
	}
	kv := append([]attribute.KeyValue(nil), o.attrs...)
	kv = append(kv,
		AttrFailureMode.String(k.policy),
		AttrReason.String(k.reason),
		AttrQuota.String(k.quota),
		AttrOutcome.String(outcome))
	set := attribute.NewSet(kv...)
	return &degradedAttrs{count: []metric.AddOption{metric.WithAttributeSet(set)}, event: set.ToSlice()}
}

// An errorClass is a value of AttrErrorType.
type errorClass uint8

const (
	errNone errorClass = iota
	errClassUnavailable
	errClassDeadline
	errClassCanceled
	errClassUnsupported
	errClassOther
	errorClasses // how many there are
)

var errorClassNames = [...]string{
	errNone:             "",
	errClassUnavailable: errUnavailable,
	errClassDeadline:    errDeadline,
	errClassCanceled:    errCanceled,
	errClassUnsupported: errUnsupported,
	errClassOther:       errOther,
}

func (c errorClass) String() string { return errorClassNames[c] }

// classify returns err's class. A store returns a context error only when
// the caller's context ended, and wraps store.ErrUnavailable around every
// other failure of its own (see package store).
func classify(err error) errorClass {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return errClassDeadline
	case errors.Is(err, context.Canceled):
		return errClassCanceled
	case errors.Is(err, store.ErrUnavailable):
		return errClassUnavailable
	case errors.Is(err, store.ErrUnsupported):
		return errClassUnsupported
	}
	return errClassOther
}
