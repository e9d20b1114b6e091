package ratelimitheader

import (
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
)

// TestWriteCalendar: a window's policy names its length in seconds; a
// calendar window's periods differ in length, so its policy names none,
// and its RateLimit counts to the period's end.
func TestWriteCalendar(t *testing.T) {
	got := map[string][]string{}
	add := func(field, value string) { got[field] = append(got[field], value) }
	algs := []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 100, Window: time.Minute},
		algorithms.CalendarWindow{Limit: 1000, Period: "month"},
	}
	results := []ratewise.Result{
		{Allowed: true, Limit: 100, Remaining: 99, ResetAfter: time.Minute},
		{Allowed: true, Limit: 1000, Remaining: 10, ResetAfter: 36 * time.Hour},
	}
	Write(add, []string{`"minute"`, `"month"`}, algs, results, 1)
	if want := []string{`"minute";q=100;w=60`, `"month";q=1000`}; strings.Join(got[PolicyField], "|") !=
		strings.Join(want, "|") {
		t.Errorf("%s: %q, want %q", PolicyField, got[PolicyField], want)
	}
	if want := `"month";r=10;t=129600`; len(got[RateLimitField]) != 1 || got[RateLimitField][0] != want {
		t.Errorf("%s: %q, want %q", RateLimitField, got[RateLimitField], want)
	}
}
