package httplimit

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// A FailureMode decides what happens to a request when the store fails or does
// not answer within the decision timeout. Whatever it decides, the
// middleware first reports the failure to the OnError hook.
type FailureMode interface {
	// answer returns the result to answer with, and false when the request
	// must be failed.
	answer(r *http.Request, key string, cost int64, err error) (ratewise.Result, bool)
	// check checks the policy for a middleware that limits with l, or
	// with a Stack or a MultiKey when l is nil.
	check(l *ratewise.Limiter) error
	// name is the policy's DegradedEvent.Mode.
	name() string
}

type failClosed struct {
	status     int
	retryAfter time.Duration
}

// FailClosed refuses requests while the store fails: with status 503
// Service Unavailable, or 429 Too Many Requests; either way with a
// Retry-After of retryAfter, rounded up to whole seconds, unless it is 0.
// It is the default, as FailClosed(503, time.Second): a broken store must
// not switch the limit off.
func FailClosed(status int, retryAfter time.Duration) FailureMode {
	return failClosed{status: status, retryAfter: retryAfter}
}

func (p failClosed) answer(*http.Request, string, int64, error) (ratewise.Result, bool) {
	return ratewise.Result{}, false
}

func (failClosed) name() string { return ModeFailClosed }

func (p failClosed) check(*ratewise.Limiter) error {
	switch {
	case p.status != http.StatusServiceUnavailable && p.status != http.StatusTooManyRequests:
		return fmt.Errorf(
			"httplimit: fail-closed status must be 503 or 429, got %d: %w",
			p.status,
			ratewise.ErrInvalidConfig,
		)
	case p.retryAfter < 0:
		return fmt.Errorf(
			"httplimit: fail-closed Retry-After must be >= 0, got %v: %w",
			p.retryAfter,
			ratewise.ErrInvalidConfig,
		)
	case p.status == http.StatusTooManyRequests && p.retryAfter == 0:
		return fmt.Errorf("httplimit: a fail-closed 429 needs a Retry-After: %w", ratewise.ErrInvalidConfig)
	}
	return nil
}

type failOpen struct{}

// FailOpen lets requests through while the store fails, without RateLimit
// headers, since nothing was decided. The OnError hook still hears of every
// failure.
func FailOpen() FailureMode { return failOpen{} }

func (failOpen) answer(*http.Request, string, int64, error) (ratewise.Result, bool) {
	return ratewise.Result{}, true
}

func (failOpen) check(*ratewise.Limiter) error { return nil }

func (failOpen) name() string { return ModeFailOpen }

type fallback struct{ local *ratewise.Limiter }

// Fallback decides with local while the store fails: typically a limiter on
// storememory whose algorithm has this instance's share of the limit (see
// Share), so that N instances together still admit about the limit. Its
// decisions carry RateLimit headers like any other; if local fails too,
// the request fails as with FailClosed(503, 0). Since local holds a share
// of the limiter's algorithm only, a middleware with Fallback takes no
// Route.
func Fallback(local *ratewise.Limiter) FailureMode { return fallback{local: local} }

func (p fallback) answer(r *http.Request, key string, cost int64, _ error) (ratewise.Result, bool) {
	res, err := p.local.AllowN(r.Context(), key, cost)
	return res, err == nil
}

func (fallback) name() string { return ModeFallback }

func (p fallback) check(l *ratewise.Limiter) error {
	switch {
	case l == nil:
		return fmt.Errorf(
			"httplimit: Fallback needs a Limiter; a Stack or a MultiKey fails closed or open: %w",
			ratewise.ErrInvalidConfig,
		)
	case p.local == nil:
		return fmt.Errorf("httplimit: nil fallback limiter: %w", ratewise.ErrInvalidConfig)
	}
	if p.local.Algorithm().Kind().String() != l.Algorithm().Kind().String() {
		return fmt.Errorf(
			"httplimit: the fallback limiter runs %s, the limiter %s; the RateLimit headers would change meaning: %w",
			p.local.Algorithm().Kind().String(),
			l.Algorithm().Kind().String(),
			ratewise.ErrInvalidConfig,
		)
	}
	return nil
}

// Share returns alg with its limit divided among instances app instances,
// for a Fallback limiter: the limit, capacity or burst is divided, rounded
// down, and a rate is slowed by the same factor exactly. With 100 per
// minute and 4 instances, each falls back to 25 per minute. It fails with
// algorithms.ErrInvalidAlgorithm when the limit is smaller than instances,
// and for a nil or invalid alg, and with ratewise.ErrInvalidConfig for
// instances below 1.
func Share(alg algorithms.Algorithm, instances int64) (algorithms.Algorithm, error) {
	if instances < 1 {
		return nil, fmt.Errorf(
			"httplimit: Share: %w: instances must be >= 1, got %d",
			ratewise.ErrInvalidConfig,
			instances,
		)
	}
	if alg == nil {
		return nil, fmt.Errorf("httplimit: Share: %w: the algorithm is nil", algorithms.ErrInvalidAlgorithm)
	}
	if err := algo.CheckKind(alg); err != nil {
		return nil, fmt.Errorf("httplimit: Share: %w", err)
	}
	// The quota's limit is divided; a rate (the limit of an algorithm with
	// a burst) is slowed by stretching its period, which stays exact.
	p, k := algo.ParamsOf(alg), alg.Kind()
	n := algo.QuotaOf(alg).Limit
	if n/instances < 1 {
		return nil, fmt.Errorf(
			"httplimit: Share: %w: %d among %d instances leaves less than 1 each",
			algorithms.ErrInvalidAlgorithm,
			n,
			instances,
		)
	}
	if algo.TakesBurst(k) {
		if p.Window > math.MaxInt64/time.Duration(instances) {
			return nil, fmt.Errorf(
				"httplimit: Share: %w: a period of %v among %d instances overflows",
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
		return nil, fmt.Errorf("httplimit: Share: %w", err)
	}
	return shared, nil
}
