package contract

import (
	"context"
	"time"
	_ "time/tzdata" // the zones the rules name, on a machine without its own

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// The calendar window's rules run on its case alone: the other
// algorithms have no calendar. Each period's first instant is found by
// calendarStart, which walks the calendar day by day, not by the step's
// arithmetic.

// zone loads an IANA zone for a rule.
func (e *env) zone(name string) *time.Location {
	e.t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		e.t.Fatal(err)
	}
	return loc
}

// onlyCalendar skips a calendar rule on every other algorithm.
func (e *env) onlyCalendar() {
	if algo.FamilyOf(e.c.kind) != algo.FamilyCalendar {
		e.t.Skip("a rule of the calendar window")
	}
}

// calendarPeriod checks one period of alg from its first instant: a
// fresh key admits Limit there and denies the next request until the next
// period's first instant, with a RetryAfter that lands exactly on it, the
// last microsecond before it included; then the next period admits Limit
// again. want is the period's length, as the calendar says.
func (e *env) calendarPeriod(alg algorithms.CalendarWindow, first time.Time, want time.Duration, what string) {
	e.t.Helper()
	next := calendarStart(alg, first.Add(want))
	if got := next.Sub(first); got != want || calendarStart(alg, first) != first {
		e.fatalf("%s: the calendar's period from %v lasts %v, want %v", what, first, got, want)
	}
	l := e.limiter(alg)
	e.clock.Set(first)
	for i := range alg.Limit {
		if res := e.allow(l, "k"); !res.Allowed || res.Remaining != alg.Limit-1-i || res.ResetAfter != want {
			e.fatalf("%s: request %d at the period's first instant %v: %+v, want admitted with ResetAfter %v",
				what, i+1, first, res, want)
		}
	}
	for _, at := range []time.Time{first, first.Add(want / 2), next.Add(-time.Microsecond)} {
		e.clock.Set(at)
		if res := e.allow(l, "k"); res.Allowed || res.RetryAfter != next.Sub(at) || res.Remaining != 0 {
			e.fatalf("%s: at %v, a request over the limit got %+v, want denied with RetryAfter %v, to %v",
				what, at, res, next.Sub(at), next)
		}
	}
	e.clock.Set(next)
	if res := e.allow(l, "k"); !res.Allowed || res.Remaining != alg.Limit-1 {
		e.fatalf("%s: at the next period's first instant %v: %+v, want admitted afresh", what, next, res)
	}
}

// calendarMonths: months of 28, 29, 30 and 31 days, leap years by the
// Gregorian rule (2100 is not one), in UTC and in a zone whose month
// starts at another instant.
func calendarMonths(e *env) {
	e.onlyCalendar()
	day := 24 * time.Hour
	berlin := e.zone("Europe/Berlin")
	for _, c := range []struct {
		loc   *time.Location
		first time.Time
		days  int
		what  string
	}{
		{time.UTC, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), 28, "February 2026"},
		{time.UTC, time.Date(2028, 2, 1, 0, 0, 0, 0, time.UTC), 29, "February 2028, a leap year"},
		{time.UTC, time.Date(2100, 2, 1, 0, 0, 0, 0, time.UTC), 28, "February 2100, not a leap year"},
		{time.UTC, time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), 30, "April 2026"},
		{time.UTC, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 31, "December 2026, into a new year"},
		{berlin, time.Date(2026, 6, 1, 0, 0, 0, 0, berlin), 30, "June 2026 in Berlin"},
	} {
		alg := algorithms.CalendarWindow{Limit: 3, Period: "month", Location: c.loc}
		e.calendarPeriod(alg, c.first, time.Duration(c.days)*day, c.what)
	}
}

// calendarClockChanges: a day is 23 or 25 hours, or 23.5 and 24.5 on Lord
// Howe Island, when the clocks change, starts at 01:00 where they jump over
// midnight, and a week or month that holds a change is as much shorter or
// longer.
func calendarClockChanges(e *env) {
	e.onlyCalendar()
	berlin, york := e.zone("Europe/Berlin"), e.zone("America/New_York")
	howe, santiago := e.zone("Australia/Lord_Howe"), e.zone("America/Santiago")
	for _, c := range []struct {
		period string
		first  time.Time
		length time.Duration
		what   string
	}{
		{"day", time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), 23 * time.Hour, "Berlin's day of 23 hours"},
		{"day", time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), 25 * time.Hour, "Berlin's day of 25 hours"},
		{"day", time.Date(2026, 3, 8, 0, 0, 0, 0, york), 23 * time.Hour, "New York's day of 23 hours"},
		{"day", time.Date(2026, 11, 1, 0, 0, 0, 0, york), 25 * time.Hour, "New York's day of 25 hours"},
		{"day", time.Date(2026, 10, 4, 0, 0, 0, 0, howe), 23*time.Hour + 30*time.Minute, "Lord Howe's short day"},
		{"day", time.Date(2026, 4, 5, 0, 0, 0, 0, howe), 24*time.Hour + 30*time.Minute, "Lord Howe's long day"},
		// Santiago's clocks jump from 24:00 to 01:00: September 6th
		// starts at 01:00 and the day before lasts 24 hours.
		{"day", time.Date(2026, 9, 5, 0, 0, 0, 0, santiago), 24 * time.Hour, "Santiago's day before midnight is skipped"},
		{"day", time.Date(2026, 9, 6, 1, 0, 0, 0, santiago), 23 * time.Hour, "Santiago's day that starts at 01:00"},
		{"week", time.Date(2026, 3, 23, 0, 0, 0, 0, berlin), 7*24*time.Hour - time.Hour, "Berlin's short week"},
		{"week", time.Date(2026, 10, 19, 0, 0, 0, 0, berlin), 7*24*time.Hour + time.Hour, "Berlin's long week"},
		{"month", time.Date(2026, 3, 1, 0, 0, 0, 0, berlin), 31*24*time.Hour - time.Hour, "Berlin's March"},
		{"month", time.Date(2026, 10, 1, 0, 0, 0, 0, berlin), 31*24*time.Hour + time.Hour, "Berlin's October"},
	} {
		alg := algorithms.CalendarWindow{Limit: 2, Period: c.period, Location: c.first.Location()}
		e.calendarPeriod(alg, c.first, c.length, c.what)
	}
}

// calendarTiers: a key moved to another limit keeps what it used in the
// current period, and starts the next period afresh under the limit it
// then has; a limit lowered below what was used denies until the next
// period's first instant.
func calendarTiers(e *env) {
	e.onlyCalendar()
	york := e.zone("America/New_York")
	free := algorithms.CalendarWindow{Limit: 3, Period: "month", Location: york}
	paid := algorithms.CalendarWindow{Limit: 10, Period: "month", Location: york}
	plan := free
	l := e.limiterOn(free, e.clock, ratewise.WithTiers(func(context.Context, string) (algorithms.Algorithm, error) {
		return plan, nil
	}))
	jan, feb := time.Date(2027, 1, 31, 22, 0, 0, 0, york), time.Date(2027, 2, 1, 0, 0, 0, 0, york)
	e.clock.Set(jan)
	if got := e.count(l, "user"); got != 3 {
		e.fatalf("the free plan admitted %d on January 31st, want 3", got)
	}
	plan = paid // upgraded: 7 more this month
	if got := e.count(l, "user"); got != 7 {
		e.fatalf("after the upgrade on January 31st, %d more admitted, want 7 of 10", got)
	}
	plan = free // downgraded within the month: denied until February
	e.clock.Set(feb.Add(-time.Second))
	if res := e.allow(l, "user"); res.Allowed || res.RetryAfter != time.Second || res.Limit != 3 {
		e.fatalf("after the downgrade, 1s before February: %+v, want denied until February's first instant", res)
	}
	e.clock.Set(feb)
	if got := e.count(l, "user"); got != 3 {
		e.fatalf("the free plan admitted %d on February 1st, want 3: the new month starts afresh", got)
	}
	plan = paid
	if got := e.count(l, "user"); got != 7 {
		e.fatalf("after the upgrade on February 1st, %d more admitted, want 7 of 10", got)
	}
}

// calendarStoreClock: on whatever clock the store decides by, a key that
// used its quota is denied until the next period's first instant after the
// decision's own time (Result.At), to the microsecond, in UTC and in a
// zone with clock changes.
func calendarStoreClock(e *env) {
	e.onlyCalendar()
	for _, alg := range []algorithms.CalendarWindow{
		{Limit: 2, Period: "month"},
		{Limit: 2, Period: "day", Location: e.zone("Australia/Lord_Howe")},
		{Limit: 2, Period: "week", Location: e.zone("America/New_York")},
	} {
		l := e.limiter(alg)
		for i := range alg.Limit {
			res := e.allow(l, "k")
			if next := firstAfter(alg, res.At); !res.Allowed || !res.At.Add(res.ResetAfter).Equal(next) {
				e.fatalf("%v: request %d: %+v, want admitted with ResetAfter %v, to %v",
					alg, i+1, res, next.Sub(res.At), next)
			}
		}
		// At is the decision's time, on the store's clock if it decides by
		// its own, and RetryAfter counts from that same now: the two add
		// up to the next period's first instant.
		res := e.allow(l, "k")
		if next := firstAfter(alg, res.At); res.Allowed || res.Remaining != 0 || !res.At.Add(res.RetryAfter).Equal(next) {
			e.fatalf("%v: a request over the limit at %v got %+v, want denied until %v", alg, res.At, res, next)
		}
	}
}

// firstAfter is the first instant of the period after the one t is in.
func firstAfter(alg algorithms.CalendarWindow, t time.Time) time.Time {
	start := calendarStart(alg, t)
	for d := 23 * time.Hour; ; d += time.Hour {
		if next := calendarStart(alg, start.Add(d)); next != start {
			return next
		}
	}
}
