package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
)

type headerSet struct{ draft, legacy bool }

// RetryAfterSeconds is d in whole seconds, rounded up so that a client that
// waits that long is admitted, and at least 1: Retry-After: 0 would invite
// an immediate retry that is denied again.
func RetryAfterSeconds(d time.Duration) int64 { return max(ceilSeconds(d), 1) }

// ceilSeconds is d in whole seconds, rounded up; 0 for 0.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return max(s, 0)
}

// setHeaders writes the rate-limit fields for res. The draft fields are
// lists, one member per middleware in a chain; the legacy fields hold one
// value, the innermost middleware's:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=18
//
// q is Result.Limit and w the algorithm's window in seconds, left out when
// it is not a whole number of seconds; r is Result.Remaining and t
// Result.ResetAfter rounded up to whole seconds: the time until the key is
// back at its full quota.
func (m *Middleware) setHeaders(h http.Header, res ratewise.Result, alg algorithms.Algorithm) {
	if m.headers.draft {
		name := strconv.Quote(m.name)
		var policy strings.Builder
		policy.WriteString(name)
		policy.WriteString(";q=")
		policy.WriteString(strconv.FormatInt(res.Limit, 10))
		if w := alg.Quota().Window; w >= time.Second && w%time.Second == 0 {
			policy.WriteString(";w=")
			policy.WriteString(strconv.FormatInt(int64(w/time.Second), 10))
		}
		// Add, not Set: both fields are lists, so limiters in a chain each
		// contribute their policy.
		h.Add("RateLimit-Policy", policy.String())
		h.Add("RateLimit", name+";r="+strconv.FormatInt(res.Remaining, 10)+";t="+strconv.FormatInt(ceilSeconds(res.ResetAfter), 10))
	}
	if m.headers.legacy {
		h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.ResetAfter), 10))
	}
}
