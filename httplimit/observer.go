package httplimit

import (
	"context"
	"fmt"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/failmode"
)

// Failure modes, as DegradedEvent.Mode names them.
const (
	ModeFailOpen   = failmode.OpenName
	ModeFailClosed = failmode.ClosedName
	ModeFallback   = failmode.FallbackName
)

// DegradedEvent is one request the failure mode answered, because the store
// failed or did not answer within the decision timeout (see WithObserver).
type DegradedEvent struct {
	// Mode is the failure mode that answered: ModeFailOpen,
	// ModeFailClosed or ModeFallback.
	Mode string
	// Allowed reports whether the mode let the request through: always
	// under fail-open, never under fail-closed, and under fallback when the
	// local limiter admitted it (not when it denied it or failed too). In
	// dry-run mode (WithDryRun) the request goes on either way.
	Allowed bool
	// Quota names the limit, as the RateLimit fields do: the route's name
	// for a Route, WithQuotaName's otherwise; for a Stack or a MultiKey
	// given a name per limit, the names joined with ','. Its values are few
	// and fixed, so it may label metrics.
	Quota string
	// Err is the store's error, as the OnError hook heard it. It matches
	// context.DeadlineExceeded when no decision came within the decision
	// timeout (WithTimeout), and store.ErrUnavailable when the store
	// failed.
	Err error
}

// WithObserver reports every degraded decision to observe: every request
// the FailureMode answered because the store failed or did not answer
// within the decision timeout. The OnError hook hears of the same failures,
// and of others; the observer hears what was done about each, for metrics.
// Decisions the limiter made are reported by its own observer (see
// ratewise.WithObserver). For example, to count them with Prometheus:
//
//	observe := func(_ context.Context, e httplimit.DegradedEvent) {
//		reason := "unavailable"
//		if errors.Is(e.Err, context.DeadlineExceeded) {
//			reason = "timeout"
//		}
//		degraded.WithLabelValues(e.Mode, reason).Inc()
//	}
//	mw, err := httplimit.New(l, httplimit.WithFailureMode(httplimit.FailOpen()),
//		httplimit.WithObserver(observe))
//
// observe runs on the request's goroutine before the request is answered,
// so it must be quick. Label metrics with Mode, Allowed, Quota and whether
// Err is a timeout, never with the request's key, path or client.
func WithObserver(observe func(ctx context.Context, e DegradedEvent)) Option {
	return optionFunc(func(m *Middleware) error {
		if observe == nil {
			return fmt.Errorf("httplimit: nil observer: %w", ratewise.ErrInvalidConfig)
		}
		m.observer = observe
		return nil
	})
}
