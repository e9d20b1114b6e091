// Package ratelimitheader writes the rate-limit fields of a decision for
// the middlewares, httplimit as HTTP headers and grpclimit as gRPC
// trailers, so that both say the same thing in the same words: the IETF
// draft fields RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers) and the seconds of a Retry-After.
// It also checks the quota names the fields carry and gives each limit its
// name.
package ratelimitheader

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// The fields' names, as HTTP writes them; gRPC metadata lowercases them.
const (
	PolicyField    = "RateLimit-Policy"
	RateLimitField = "RateLimit"
	RetryAfter     = "Retry-After"
)

// CheckName checks one name for a quota or a route: it must be a
// structured-field string that needs no escape the fields would have to
// spell, so printable ASCII and not empty. The error wraps
// ratewise.ErrInvalidConfig and names no package, which its caller adds.
func CheckName(name string) error {
	if name == "" {
		return fmt.Errorf("empty quota name: %w", ratewise.ErrInvalidConfig)
	}
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("quota name %q must be printable ASCII: %w", name, ratewise.ErrInvalidConfig)
		}
	}
	return nil
}

// CheckNames checks the names given for a middleware's quotas: at least
// one, each valid (CheckName), none twice.
func CheckNames(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("no quota name given: %w", ratewise.ErrInvalidConfig)
	}
	for i, n := range names {
		if err := CheckName(n); err != nil {
			return err
		}
		for _, earlier := range names[:i] {
			if n == earlier {
				return fmt.Errorf("quota name %q given twice: %w", n, ratewise.ErrInvalidConfig)
			}
		}
	}
	return nil
}

// Names gives each of n limits its name, quoted as the fields carry it,
// from names, which CheckNames accepted: one name for one limit; for
// several, either one name, numbered after it in order ("default-1",
// "default-2", ...), or one name per limit, in order. Any other count
// fails with an error that wraps ratewise.ErrInvalidConfig.
func Names(names []string, n int) ([]string, error) {
	switch {
	case len(names) == n:
		quoted := make([]string, n)
		for i, name := range names {
			quoted[i] = strconv.Quote(name)
		}
		return quoted, nil
	case len(names) == 1:
		quoted := make([]string, n)
		for i := range quoted {
			quoted[i] = strconv.Quote(names[0] + "-" + strconv.Itoa(i+1))
		}
		return quoted, nil
	case n == 1:
		return nil, fmt.Errorf("%d quota names for one limit, which takes one: %w", len(names), ratewise.ErrInvalidConfig)
	}
	return nil, fmt.Errorf(
		"%d quota names for %d limits: give one, which is numbered, or one per limit, in order: %w",
		len(names),
		n,
		ratewise.ErrInvalidConfig,
	)
}

// Quota is the name a DegradedEvent gives the quotas of names: the one
// name, or every name joined with ','. It is fixed for a middleware, so
// it may label metrics.
func Quota(names []string) string { return strings.Join(names, ",") }

// Write writes the draft fields of one decision with add, one member at a
// time, since both fields are lists to which every middleware in a chain
// adds its own:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=18
//
// names are the limits' quoted names (Names), algs their algorithms and
// results their Results for this request, and binding the index of the
// limit that binds, which RateLimit reports. q is Result.Limit and w the
// algorithm's window in seconds, left out when it is not a whole number of
// seconds, and for a calendar window, whose periods differ in length; r is
// Result.Remaining and t Result.ResetAfter rounded up to whole seconds: the
// time until the key is back at its full quota.
func Write(
	add func(field, value string),
	names []string,
	algs []algorithms.Algorithm,
	results []ratewise.Result,
	binding int,
) {
	for i, alg := range algs {
		var policy strings.Builder
		policy.WriteString(names[i])
		policy.WriteString(";q=")
		policy.WriteString(strconv.FormatInt(results[i].Limit, 10))
		w := algo.QuotaOf(alg).Window
		if algo.FamilyOf(alg.Kind()) != algo.FamilyCalendar && w >= time.Second && w%time.Second == 0 {
			policy.WriteString(";w=")
			policy.WriteString(strconv.FormatInt(int64(w/time.Second), 10))
		}
		add(PolicyField, policy.String())
	}
	b := results[binding]
	add(
		RateLimitField,
		names[binding]+";r="+strconv.FormatInt(b.Remaining, 10)+";t="+strconv.FormatInt(CeilSeconds(b.ResetAfter), 10),
	)
}

// RetryAfterSeconds is d in whole seconds, rounded up so that a client that
// waits that long is admitted, and at least 1: Retry-After: 0 would invite
// an immediate retry that is denied again.
func RetryAfterSeconds(d time.Duration) int64 { return max(CeilSeconds(d), 1) }

// CeilSeconds is d in whole seconds, rounded up; 0 for 0 or less.
func CeilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return max(s, 0)
}
