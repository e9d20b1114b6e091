// Package failmode decides a request for the middlewares, httplimit's and
// grpclimit's, and says what the request gets when the store fails: the
// failure modes (fail closed, fail open, fall back to a local limiter),
// their checks, the decision timeout, and which errors are the store's to
// hand to the mode. A middleware keeps only what its transport adds: how
// keys are read, and how an answer is written (a status and headers, a
// code and trailers).
package failmode

import (
	"fmt"
	"math"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// The failure modes' names, as a degraded event reports them.
const (
	OpenName     = "fail_open"
	ClosedName   = "fail_closed"
	FallbackName = "fallback"
)

// Mode is a failure mode: what a request gets when the store fails or does
// not answer within the decision timeout. A middleware wraps one in its own
// FailureMode, which adds what only its transport has, such as the HTTP
// status of a closed answer.
type Mode struct {
	name string
	// throttle, for a closed mode, answers as a limit does (HTTP 429, gRPC
	// ResourceExhausted) rather than as an unavailable service, which needs
	// a retryAfter to tell clients when to come back.
	throttle   bool
	retryAfter time.Duration
	local      *ratewise.Limiter // Fallback's
}

// Closed refuses requests while the store fails, telling clients to come
// back after retryAfter unless it is 0; throttle answers as a limit does
// instead of as an unavailable service.
func Closed(throttle bool, retryAfter time.Duration) Mode {
	return Mode{name: ClosedName, throttle: throttle, retryAfter: retryAfter}
}

// Open lets requests through while the store fails.
func Open() Mode { return Mode{name: OpenName} }

// Fallback decides with local while the store fails.
func Fallback(local *ratewise.Limiter) Mode { return Mode{name: FallbackName, local: local} }

// Name is the mode's name (ClosedName, OpenName or FallbackName).
func (m Mode) Name() string { return m.name }

// RetryAfter is a closed mode's wait before clients come back, 0 for none.
func (m Mode) RetryAfter() time.Duration { return m.retryAfter }

// Check checks m for a middleware that limits with l, or with a Stack or a
// MultiKey when l is nil. throttle names a throttling closed answer in the
// transport's words, such as "429", for its error. Errors wrap
// ratewise.ErrInvalidConfig and name no package, which their caller adds.
func (m Mode) Check(l *ratewise.Limiter, throttle string) error {
	switch m.name {
	case ClosedName:
		switch {
		case m.retryAfter < 0:
			return fmt.Errorf("fail-closed Retry-After must be >= 0, got %v: %w", m.retryAfter, ratewise.ErrInvalidConfig)
		case m.throttle && m.retryAfter == 0:
			return fmt.Errorf("a fail-closed %s needs a Retry-After: %w", throttle, ratewise.ErrInvalidConfig)
		}
	case FallbackName:
		switch {
		case l == nil:
			return fmt.Errorf(
				"Fallback needs a Limiter; a Stack or a MultiKey fails closed or open: %w",
				ratewise.ErrInvalidConfig,
			)
		case m.local == nil:
			return fmt.Errorf("nil fallback limiter: %w", ratewise.ErrInvalidConfig)
		}
		if m.local.Algorithm().Kind().String() != l.Algorithm().Kind().String() {
			return fmt.Errorf(
				"the fallback limiter runs %s, the limiter %s; the RateLimit headers would change meaning: %w",
				m.local.Algorithm().Kind().String(),
				l.Algorithm().Kind().String(),
				ratewise.ErrInvalidConfig,
			)
		}
	case OpenName:
	default:
		return fmt.Errorf("no failure mode: %w", ratewise.ErrInvalidConfig)
	}
	return nil
}

// Share returns alg with its limit divided among instances app instances,
// for a Fallback limiter: the limit, capacity or burst is divided, rounded
// down, and a rate is slowed by the same factor exactly. It fails with
// algorithms.ErrInvalidAlgorithm when the limit is smaller than instances,
// and for a nil or invalid alg, and with ratewise.ErrInvalidConfig for
// instances below 1. Errors name no package, which their caller adds.
func Share(alg algorithms.Algorithm, instances int64) (algorithms.Algorithm, error) {
	if instances < 1 {
		return nil, fmt.Errorf("Share: %w: instances must be >= 1, got %d", ratewise.ErrInvalidConfig, instances)
	}
	if alg == nil {
		return nil, fmt.Errorf("Share: %w: the algorithm is nil", algorithms.ErrInvalidAlgorithm)
	}
	if err := algo.CheckKind(alg); err != nil {
		return nil, fmt.Errorf("Share: %w", err)
	}
	// The quota's limit is divided; a rate (the limit of an algorithm with
	// a burst) is slowed by stretching its period, which stays exact.
	p, k := algo.ParamsOf(alg), alg.Kind()
	n := algo.QuotaOf(alg).Limit
	if n/instances < 1 {
		return nil, fmt.Errorf(
			"Share: %w: %d among %d instances leaves less than 1 each",
			algorithms.ErrInvalidAlgorithm,
			n,
			instances,
		)
	}
	if algo.TakesBurst(k) {
		if p.Window > math.MaxInt64/time.Duration(instances) {
			return nil, fmt.Errorf(
				"Share: %w: a period of %v among %d instances overflows",
				algorithms.ErrInvalidAlgorithm,
				p.Window,
				instances,
			)
		}
		p.Burst, p.Window = n/instances, p.Window*time.Duration(instances)
	} else {
		p.Limit = n / instances
	}
	shared, err := k.New(p)
	if err != nil {
		return nil, fmt.Errorf("Share: %w", err)
	}
	return shared, nil
}
