package httplimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/failmode"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

type headerSet struct{ draft, legacy bool }

// RetryAfterSeconds is d in whole seconds, rounded up so that a client that
// waits that long is admitted, and at least 1: Retry-After: 0 would invite
// an immediate retry that is denied again.
func RetryAfterSeconds(d time.Duration) int64 { return ratelimitheader.RetryAfterSeconds(d) }

// setHeaders writes the rate-limit fields for d. The draft fields are
// lists, one member per limit and per middleware in a chain, written as
// grpclimit writes its trailers (see internal/ratelimitheader); the legacy
// fields hold one value, the innermost middleware's binding limit's:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=18
func (m *Middleware) setHeaders(h http.Header, d failmode.Decision, algs []algorithms.Algorithm) {
	if m.headers.draft {
		// Add, not Set: both fields are lists, so limiters in a chain each
		// contribute their policy.
		ratelimitheader.Write(h.Add, m.quotas, algs, d.Results, d.Binding)
	}
	if m.headers.legacy {
		res := d.Results[d.Binding]
		h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ratelimitheader.CeilSeconds(res.ResetAfter), 10))
	}
}
