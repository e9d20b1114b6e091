// Package ratewiseotel records ratewise's decisions as OpenTelemetry
// metrics and span events. It is its own Go module,
// github.com/ratewise/ratewise/otel, so that ratewise itself does not
// depend on OpenTelemetry; import it with its package name:
//
//	import ratewiseotel "github.com/ratewise/ratewise/otel"
//
// An Observer observes limiters and Stacks with its ObserveDecision and
// middlewares with its ObserveDegraded: give them to every limiter, Stack
// and middleware that should be measured.
//
//	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
//	limiter, err := ratewise.New(s, alg, ratewise.WithObserver(obs.ObserveDecision))
//	mw, err := httplimit.New(limiter, httplimit.WithObserver(obs.ObserveDegraded))
//
// Without WithMeterProvider, the global meter provider records. The
// directory example/prometheus holds a server that exports to Prometheus.
//
// # Metrics
//
// Names follow OpenTelemetry's conventions; a Prometheus exporter
// writes them with underscores and a unit suffix, given in brackets.
//
//   - ratewise.decisions (ratewise_decisions_total), a counter of
//     decisions, unit {decision}, with ratewise.source ("limiter" or
//     "stack"), ratewise.algorithm (the algorithm's name, such as "gcra"),
//     ratewise.binding (the binding limit's index in a Stack, 0 for a
//     Limiter), ratewise.outcome ("allowed", "denied" or "error"),
//     ratewise.peek (true for Peek and PeekN, which charge nothing; their
//     outcome is what a request would get), and, for an error, error.type.
//   - ratewise.store.duration (ratewise_store_duration_seconds), a
//     histogram of how long the store took to answer, in seconds, with
//     ratewise.algorithm, ratewise.outcome and error.type, in buckets
//     from 100µs to 1s: 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
//     0.01, 0.025, 0.05, 0.1, 0.25, 0.5 and 1. An SDK View with
//     MetricStoreDuration can change them.
//   - ratewise.http.degraded_requests
//     (ratewise_http_degraded_requests_total), a counter of the requests
//     httplimit's failure mode answered because the store failed or did
//     not answer in time, unit {request}, with ratewise.failure_mode
//     ("fail_open", "fail_closed" or "fallback"), ratewise.reason
//     ("timeout" or "unavailable"), ratewise.quota (the route's name, or
//     httplimit.WithQuotaName's) and ratewise.outcome ("allowed" or
//     "denied": what the policy did).
//   - ratewise.store.clock.offset and ratewise.store.clock.uncertainty
//     (ratewise_store_clock_offset_seconds and
//     ratewise_store_clock_uncertainty_seconds), gauges in seconds, and
//     ratewise.store.clock.errors (ratewise_store_clock_errors_total), a
//     counter with error.type; each with the attributes of WithAttributes:
//     the Redis store's clock against this process's, only once
//     ObserveClockOffset is called.
//
// error.type is "unavailable" when the store failed, "deadline_exceeded"
// or "canceled" when the caller's context ended first, "unsupported" for
// an algorithm the store cannot run, and "_OTHER" for anything else.
// WithLimitAttribute adds ratewise.limit, the algorithm with its
// parameters; WithAttributes adds attributes of the application's own.
//
// # Cardinality
//
// Every attribute takes one of a few fixed values, or a number bounded by
// the application's configuration (a Stack's size, its routes), so a
// metric has a handful of series however many keys are limited. The key,
// which names users, addresses and paths, is never an attribute of a
// metric, a span or an event, nor is a store error's message, which may
// quote it. WithLimitAttribute keeps that promise only when the limits
// are fixed; a ratewise.WithTiers function that computes a limit per customer
// would make a series per customer.
//
// # Traces
//
// When the decision's context carries a recording span, such as the
// server span of an instrumented HTTP handler, each decision adds an event
// named "ratewise.decision" to it, with the counter's attributes and the
// request's ratewise.cost, and for a decision ratewise.remaining and
// ratewise.retry_after (in seconds); each degraded answer adds a
// "ratewise.degraded" event with the degraded counter's attributes. No
// span is made by default. WithDecisionSpans makes one per decision made
// within a trace instead, and WithoutSpanEvents adds no events.
//
// # Cost
//
// An Observer builds each combination of attributes once and keeps it,
// so an observed decision allocates nothing when its context has no
// recording span (TestObserveDecisionAllocatesNothing;
// BenchmarkObserveDecision times it).
package ratewiseotel
