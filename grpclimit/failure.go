package grpclimit

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/internal/failmode"
)

// A FailureMode decides what happens to a call when the store fails or does
// not answer within the decision timeout. Whatever it decides, the
// interceptor first reports the failure to the OnError hook. The modes are
// httplimit's, sharing its code; only a closed mode's answer is gRPC's.
type FailureMode interface {
	failure() failure
}

// failure is every FailureMode: the mode httplimit shares, and the code of
// a closed one.
type failure struct {
	mode failmode.Mode
	code codes.Code // FailClosed's: Unavailable or ResourceExhausted
}

func (f failure) failure() failure { return f }

// check checks f for an interceptor that limits with l, or with a Stack or
// a MultiKey when l is nil, and returns its mode.
func (f failure) check(l *ratewise.Limiter) (failmode.Mode, error) {
	if f.mode.Name() == failmode.ClosedName && f.code != codes.Unavailable && f.code != codes.ResourceExhausted {
		return failmode.Mode{}, fmt.Errorf(
			"grpclimit: fail-closed code must be Unavailable or ResourceExhausted, got %v: %w",
			f.code,
			ratewise.ErrInvalidConfig,
		)
	}
	if err := f.mode.Check(l, "ResourceExhausted"); err != nil {
		return failmode.Mode{}, fmt.Errorf("grpclimit: %w", err)
	}
	return f.mode, nil
}

// FailClosed refuses calls while the store fails: with code
// codes.Unavailable, which clients and retry policies take as "try again
// later", or codes.ResourceExhausted, as a limit would; either way with a
// RetryInfo detail of retryAfter and a retry-after trailer of its whole
// seconds, rounded up, unless it is 0. A ResourceExhausted needs a
// retryAfter. It is the default, as FailClosed(codes.Unavailable,
// time.Second): a broken store must not switch the limit off. It is
// httplimit.FailClosed with gRPC's codes for HTTP's 503 and 429.
func FailClosed(code codes.Code, retryAfter time.Duration) FailureMode {
	return failure{mode: failmode.Closed(code == codes.ResourceExhausted, retryAfter), code: code}
}

// FailOpen lets calls through while the store fails, without RateLimit
// trailers, since nothing was decided. The OnError hook still hears of
// every failure.
func FailOpen() FailureMode { return failure{mode: failmode.Open()} }

// Fallback decides with local while the store fails: typically a limiter on
// storememory whose algorithm has this instance's share of the limit (see
// Share), so that N instances together still admit about the limit. Its
// decisions carry RateLimit trailers like any other; if local fails too,
// the call fails as with FailClosed(codes.Unavailable, 0). A Stack or a
// MultiKey takes no Fallback.
func Fallback(local *ratewise.Limiter) FailureMode { return failure{mode: failmode.Fallback(local)} }

// Share returns alg with its limit divided among instances app instances,
// for a Fallback limiter, as httplimit.Share does: with 100 per minute and
// 4 instances, each falls back to 25 per minute.
func Share(alg algorithms.Algorithm, instances int64) (algorithms.Algorithm, error) {
	shared, err := failmode.Share(alg, instances)
	if err != nil {
		return nil, fmt.Errorf("grpclimit: %w", err)
	}
	return shared, nil
}

// DegradedEvent is one call the failure mode answered, because the store
// failed or did not answer within the decision timeout (see WithObserver).
// It is httplimit's, so that one observer serves both, such as the otel
// module's Observer.ObserveDegraded: Mode is httplimit.ModeFailOpen,
// httplimit.ModeFailClosed or httplimit.ModeFallback, and Quota names the
// limits as the RateLimit trailers do.
type DegradedEvent = httplimit.DegradedEvent
