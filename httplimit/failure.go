package httplimit

import (
	"fmt"
	"net/http"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/failmode"
)

// A FailureMode decides what happens to a request when the store fails or does
// not answer within the decision timeout. Whatever it decides, the
// middleware first reports the failure to the OnError hook.
type FailureMode interface {
	failure() failure
}

// failure is every FailureMode: the mode grpclimit shares, and the status
// of a closed one.
type failure struct {
	mode   failmode.Mode
	status int // FailClosed's: 503 or 429
}

func (f failure) failure() failure { return f }

// check checks f for a middleware that limits with l, or with a Stack or a
// MultiKey when l is nil, and returns its mode.
func (f failure) check(l *ratewise.Limiter) (failmode.Mode, error) {
	if f.mode.Name() == failmode.ClosedName && f.status != http.StatusServiceUnavailable &&
		f.status != http.StatusTooManyRequests {
		return failmode.Mode{}, fmt.Errorf(
			"httplimit: fail-closed status must be 503 or 429, got %d: %w",
			f.status,
			ratewise.ErrInvalidConfig,
		)
	}
	if err := f.mode.Check(l, "429"); err != nil {
		return failmode.Mode{}, fmt.Errorf("httplimit: %w", err)
	}
	return f.mode, nil
}

// FailClosed refuses requests while the store fails: with status 503
// Service Unavailable, or 429 Too Many Requests; either way with a
// Retry-After of retryAfter, rounded up to whole seconds, unless it is 0.
// It is the default, as FailClosed(503, time.Second): a broken store must
// not switch the limit off.
func FailClosed(status int, retryAfter time.Duration) FailureMode {
	return failure{mode: failmode.Closed(status == http.StatusTooManyRequests, retryAfter), status: status}
}

// FailOpen lets requests through while the store fails, without RateLimit
// headers, since nothing was decided. The OnError hook still hears of every
// failure.
func FailOpen() FailureMode { return failure{mode: failmode.Open()} }

// Fallback decides with local while the store fails: typically a limiter on
// storememory whose algorithm has this instance's share of the limit (see
// Share), so that N instances together still admit about the limit. Its
// decisions carry RateLimit headers like any other; if local fails too,
// the request fails as with FailClosed(503, 0). Since local holds a share
// of the limiter's algorithm only, a middleware with Fallback takes no
// Route.
func Fallback(local *ratewise.Limiter) FailureMode { return failure{mode: failmode.Fallback(local)} }

// Share returns alg with its limit divided among instances app instances,
// for a Fallback limiter: the limit, capacity or burst is divided, rounded
// down, and a rate is slowed by the same factor exactly. With 100 per
// minute and 4 instances, each falls back to 25 per minute. It fails with
// algorithms.ErrInvalidAlgorithm when the limit is smaller than instances,
// and for a nil or invalid alg, and with ratewise.ErrInvalidConfig for
// instances below 1.
func Share(alg algorithms.Algorithm, instances int64) (algorithms.Algorithm, error) {
	shared, err := failmode.Share(alg, instances)
	if err != nil {
		return nil, fmt.Errorf("httplimit: %w", err)
	}
	return shared, nil
}
