package ratewiseotel

import (
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures New and ObserveClockOffset. Each option's doc says
// which of the two it applies to; the other ignores it. Defaults: the
// global meter provider, span events on the caller's span, no spans of
// its own, no extra attributes, and DefaultClockTimeout.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// DefaultClockTimeout bounds each clock reading of ObserveClockOffset
// unless WithClockTimeout says otherwise.
const DefaultClockTimeout = time.Second

type config struct {
	meters metric.MeterProvider
	// tracers makes a span per decision; nil for none, the default.
	tracers      trace.TracerProvider
	noEvents     bool
	limit        bool
	attrs        []attribute.KeyValue
	clockTimeout time.Duration
}

func newConfig(opts []Option) config {
	c := config{clockTimeout: DefaultClockTimeout}
	for _, o := range opts {
		o.apply(&c)
	}
	if c.meters == nil {
		c.meters = otel.GetMeterProvider()
	}
	return c
}

// WithMeterProvider records metrics with mp instead of the global meter
// provider (otel.GetMeterProvider). A nil mp keeps the global one. It
// applies to New and ObserveClockOffset.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) { c.meters = mp })
}

// WithDecisionSpans makes a span named "ratewise.decision" for every
// decision whose context carries a span, as its child, with the
// attributes a span event would carry, in place of that event. It starts
// when the store was asked and ends when it answered (StoreLatency), and
// its status is Error when the decision failed. tp makes the spans; nil
// means the global tracer provider (otel.GetTracerProvider).
//
// The span is made after the store has answered, as the observer hears of
// the decision only then, so spans that the store's client makes, such as
// a Redis client's, are not its children. Most applications want the
// default, an event on the span they already have; spans suit one that
// wants the store's time drawn on its traces. It applies to New.
func WithDecisionSpans(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp == nil {
			tp = otel.GetTracerProvider()
		}
		c.tracers = tp
	})
}

// WithoutSpanEvents adds no event to the caller's span: the observer then
// only records metrics (and spans, with WithDecisionSpans). It applies to
// New.
func WithoutSpanEvents() Option {
	return optionFunc(func(c *config) { c.noEvents = true })
}

// WithLimitAttribute labels decisions, and the store's durations, with
// the algorithm and its parameters as well as its name (AttrLimit), such
// as "gcra 10/1s burst 20", so that two tiers of one algorithm, or the
// limits of a Stack, can be told apart.
//
// Use it only when the limits are few and fixed, as in configuration: a
// ratewise.WithTiers function that computes a limit per customer
// makes a series per customer. It applies to New.
func WithLimitAttribute() Option {
	return optionFunc(func(c *config) { c.limit = true })
}

// WithAttributes adds attrs to every measurement, span and span event,
// such as attribute.String("ratewise.store", "sessions") to tell apart
// two observers or two stores. Their values must be few and fixed, and
// where a key is one of this package's (see AttrSource and the others),
// this package's value wins. It applies to New and ObserveClockOffset.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	return optionFunc(func(c *config) { c.attrs = append(c.attrs, attrs...) })
}

// WithClockTimeout bounds each reading of ObserveClockOffset by d instead
// of DefaultClockTimeout: a reading that takes longer fails, and the
// collection goes on without it. A d <= 0 keeps the default. It applies to
// ObserveClockOffset.
func WithClockTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) {
		if d > 0 {
			c.clockTimeout = d
		}
	})
}
