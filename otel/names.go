package ratewiseotel

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of every meter and tracer this
// package uses.
const ScopeName = "github.com/ratewise/ratewise/otel"

// Metric names. A Prometheus exporter spells them with underscores and
// the unit as a suffix, such as ratewise_decisions_total and
// ratewise_store_duration_seconds. Use them in an SDK View, for example
// to change the histogram's buckets.
const (
	// MetricDecisions counts decisions, unit {decision}.
	MetricDecisions = "ratewise.decisions"
	// MetricStoreDuration is how long the store took to decide, a
	// histogram in seconds.
	MetricStoreDuration = "ratewise.store.duration"
	// MetricDegraded counts requests httplimit's failure mode answered,
	// unit {request}.
	MetricDegraded = "ratewise.http.degraded_requests"
	// MetricClockOffset is Redis's clock minus this process's, a gauge in
	// seconds (ObserveClockOffset).
	MetricClockOffset = "ratewise.store.clock.offset"
	// MetricClockUncertainty is how far MetricClockOffset may be off, half
	// the round trip that measured it, a gauge in seconds.
	MetricClockUncertainty = "ratewise.store.clock.uncertainty"
	// MetricClockErrors counts clock readings that failed, unit {error}.
	MetricClockErrors = "ratewise.store.clock.errors"
)

// Attribute keys. Every value they take is one of a few fixed strings or a
// small number, so that no metric has more series than the limits an
// application configures (see the package documentation).
const (
	// AttrSource is "limiter" or "stack" (ratewise.DecisionEvent.Stack).
	AttrSource = attribute.Key("ratewise.source")
	// AttrAlgorithm is the algorithm's name, such as "gcra"
	// (its Kind().String()).
	AttrAlgorithm = attribute.Key("ratewise.algorithm")
	// AttrLimit is the algorithm with its parameters, such as
	// "gcra 10/1s burst 20", only with WithLimitAttribute.
	AttrLimit = attribute.Key("ratewise.limit")
	// AttrBinding is the index of the binding limit in a Stack, 0 for a
	// Limiter.
	AttrBinding = attribute.Key("ratewise.binding")
	// AttrOutcome is "allowed", "denied" or, for decisions only, "error".
	// A peek's is what a request would have got.
	AttrOutcome = attribute.Key("ratewise.outcome")
	// AttrPeek reports an inspection (Peek, PeekN), which charges nothing.
	AttrPeek = attribute.Key("ratewise.peek")
	// AttrErrorType classifies a failed decision or clock reading:
	// "unavailable" (the store failed), "deadline_exceeded", "canceled"
	// (the caller's context ended), "unsupported" or "_OTHER". It is
	// absent when there was no error.
	AttrErrorType = attribute.Key("error.type")
	// AttrFailureMode is the failure mode that answered a degraded request:
	// "fail_open", "fail_closed" or "fallback".
	AttrFailureMode = attribute.Key("ratewise.failure_mode")
	// AttrReason is why a request was degraded: "timeout" when no
	// decision came within the middleware's decision timeout (its error
	// matches context.DeadlineExceeded), "unavailable" otherwise.
	AttrReason = attribute.Key("ratewise.reason")
	// AttrQuota is the name of an httplimit quota: a route's name, or
	// httplimit.WithQuotaName's.
	AttrQuota = attribute.Key("ratewise.quota")
)

// Attribute keys that only span events and spans carry: per-request
// numbers, which would make a metric's series unbounded.
const (
	// AttrCost is the request's cost; for a peek, the cost asked about.
	AttrCost = attribute.Key("ratewise.cost")
	// AttrRemaining is Result.Remaining.
	AttrRemaining = attribute.Key("ratewise.remaining")
	// AttrRetryAfter is Result.RetryAfter in seconds.
	AttrRetryAfter = attribute.Key("ratewise.retry_after")
)

// Values of AttrOutcome and AttrErrorType.
const (
	outcomeAllowed = "allowed"
	outcomeDenied  = "denied"
	outcomeError   = "error"

	errUnavailable = "unavailable"
	errDeadline    = "deadline_exceeded"
	errCanceled    = "canceled"
	errUnsupported = "unsupported"
	errOther       = "_OTHER"
)

// Names of the span events, and of the spans WithDecisionSpans makes.
const (
	EventDecision = "ratewise.decision"
	EventDegraded = "ratewise.degraded"
)
