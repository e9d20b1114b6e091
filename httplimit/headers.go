package httplimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
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

// setHeaders writes the rate-limit fields for d. The draft fields are
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
func (m *Middleware) setHeaders(h http.Header, d decision, algs []algorithms.Algorithm) {
	// A limiter's quota is named m.name; a Stack's are numbered.
	name := func(i int) string {
		if len(algs) == 1 {
			return strconv.Quote(m.name)
		}
		return strconv.Quote(m.name + "-" + strconv.Itoa(i+1))
	}
	if m.headers.draft {
		for i, alg := range algs {
			var policy strings.Builder
			policy.WriteString(name(i))
			policy.WriteString(";q=")
			policy.WriteString(strconv.FormatInt(d.results[i].Limit, 10))
			if w := algo.QuotaOf(alg).Window; w >= time.Second && w%time.Second == 0 {
				policy.WriteString(";w=")
				policy.WriteString(strconv.FormatInt(int64(w/time.Second), 10))
			}
			// Add, not Stack: both fields are lists, so limiters in a chain
			// each contribute their policy.
			h.Add("RateLimit-Policy", policy.String())
		}
		b := d.results[d.binding]
		h.Add(
			"RateLimit",
			name(d.binding)+";r="+strconv.FormatInt(b.Remaining, 10)+";t="+strconv.FormatInt(ceilSeconds(b.ResetAfter), 10),
		)
	}
	if m.headers.legacy {
		res := d.results[d.binding]
		h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(ceilSeconds(res.ResetAfter), 10))
	}
}
