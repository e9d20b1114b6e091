package httplimit

import (
	"context"
	"errors"
)

// Observer hears of every degraded decision: a request the FailureMode
// answered because the store failed or did not answer within the decision
// timeout. The OnError hook hears of the same failures, and of others;
// Observer says what was done about each, for metrics. Decisions the
// limiter made are reported by its own ratewise.Observer (see
// ratewise.WithObserver); one type may implement both.
//
// ObserveDegraded runs on the request's goroutine before the request is
// answered, so it must be quick. Label metrics with Mode, Reason,
// Allowed and Quota, never with the request's key, path or client.
type Observer interface {
	ObserveDegraded(ctx context.Context, e DegradedEvent)
}

// Failure modes, as DegradedEvent.Mode names them.
const (
	ModeFailOpen   = "fail_open"
	ModeFailClosed = "fail_closed"
	ModeFallback   = "fallback"
)

// Reasons for a degraded decision, as DegradedEvent.Reason names them.
const (
	// ReasonTimeout: no decision within the decision timeout (WithTimeout).
	ReasonTimeout = "timeout"
	// ReasonUnavailable: the store failed (store.ErrUnavailable).
	ReasonUnavailable = "unavailable"
)

// DegradedEvent is one request the failure mode answered.
type DegradedEvent struct {
	// Mode is the failure mode that answered: ModeFailOpen,
	// ModeFailClosed or ModeFallback.
	Mode string
	// Reason is ReasonTimeout or ReasonUnavailable.
	Reason string
	// Allowed reports whether the mode let the request through: always
	// under fail-open, never under fail-closed, and under fallback when the
	// local limiter admitted it (not when it denied it or failed too). In
	// dry-run mode (WithDryRun) the request goes on either way.
	Allowed bool
	// Quota names the limit, as the RateLimit fields do: the route's name
	// for a Route, WithQuotaName's otherwise. Its values are few and fixed,
	// so it may label metrics.
	Quota string
	// Err is the store's error, as the OnError hook heard it.
	Err error
}

// WithObserver reports every degraded decision to o (see Observer). For
// example, to count them with Prometheus:
//
//	func (m metrics) ObserveDegraded(_ context.Context, e httplimit.DegradedEvent) {
//		m.degraded.WithLabelValues(e.Mode, e.Reason).Inc()
//	}
//
//	mw, err := httplimit.New(l, httplimit.WithFailureMode(httplimit.FailOpen()),
//		httplimit.WithObserver(metrics{vec}))
func WithObserver(o Observer) Option {
	return optionFunc(func(m *Middleware) error {
		if o == nil {
			return errors.New("httplimit: nil Observer")
		}
		m.observer = o
		return nil
	})
}
