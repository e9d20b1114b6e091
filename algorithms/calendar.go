package algorithms

import (
	"fmt"
	"sync"
	"time"
)

// CalendarWindow is a quota per calendar period: at most Limit cost per
// day, week or month of the calendar in Location, such as 1,000,000
// requests per month, reset on the 1st at midnight in the customer's time
// zone.
//
// Semantics: FixedWindow's, with windows that are the calendar's periods
// rather than multiples of a duration since the Unix epoch. A day runs from
// midnight to midnight in Location, so it lasts 23 or 25 hours when the
// clocks change; a week runs from Monday's midnight; a month from the 1st's
// midnight, 28 to 31 days. A request of cost n at time t is admitted when
// the cost already admitted in t's period plus n is at most Limit, and
// RetryAfter of a denial is the wait until the next period's first instant.
//
// Accuracy: exact per period, and, as with any fixed window, up to 2×Limit
// within a short span across a boundary. Choose it for quotas that people
// read off a calendar (an invoice, a plan's monthly allowance), not to
// protect a server from bursts: stack it with a rate (ratewise.Stack).
//
// Cost: FixedWindow's, one count and its period per key, O(1) work per
// decision. A store deciding on its own clock (the Redis and PostgreSQL
// stores by default) finds the period from the caller's clock and its own:
// the caller passes the boundary nearest its own now and the lengths of the
// periods on either side of it, so the two clocks may differ by up to half
// a period (11 hours, for a day cut short by a clock change) before a
// decision fails rather than count in the wrong period.
//
// Changing Limit keeps the count of the current period, as FixedWindow
// does: a key moved to a larger plan mid-month keeps what it used this
// month, and starts the next month from zero. Period and Location are the
// state's scope: a key counted per month in UTC and one counted per month
// in Europe/Berlin are separate quotas.
type CalendarWindow struct {
	// Limit is the most cost admitted per period, in [1, 2^50].
	Limit int64
	// Period is "day", "week" (from Monday) or "month".
	Period string
	// Location is the time zone whose calendar the periods follow; nil
	// is UTC. Its name (Location.String) identifies the zone in stores'
	// keys, so it must be time.UTC, a zone loaded by time.LoadLocation
	// ("America/New_York"), or a time.FixedZone whose name is its own; a
	// zone named "Local", which differs from machine to machine, is
	// refused.
	Location *time.Location
}

// Kind returns the registry's "calendar_window".
func (CalendarWindow) Kind() *Kind { return calendarWindowKind }

// params returns the parameters in their shared form.
func (a CalendarWindow) params() Params {
	return Params{Limit: a.Limit, Period: a.Period, Location: a.Location}
}

// packed returns params() packed: the period as a code and the zone as
// the index calendarZone gives it.
func (a CalendarWindow) packed() packedParams {
	return packedParams{limit: a.Limit, window: calendarCodes[a.Period], subWindows: calendarZone(a.Location)}
}

// String describes the algorithm, such as "calendar_window 1000000/month"
// or "calendar_window 1000/day in Europe/Berlin".
func (a CalendarWindow) String() string { return describe(a) }

func (CalendarWindow) sealed() {}

// Validate checks Limit in [1, 2^50], Period one of "day", "week" and
// "month", and Location nil or a zone with a name other than "Local".
func (a CalendarWindow) Validate() error {
	if a.Limit <= 0 {
		return fmt.Errorf("%w: limit must be > 0, got %d", ErrInvalidAlgorithm, a.Limit)
	}
	if err := checkCount("limit", a.Limit); err != nil {
		return err
	}
	switch a.Period {
	case "day", "week", "month":
	default:
		return fmt.Errorf("%w: period must be \"day\", \"week\" or \"month\", got %q", ErrInvalidAlgorithm, a.Period)
	}
	if a.Location != nil {
		switch name := a.Location.String(); name {
		case "", "Local":
			return fmt.Errorf(
				"%w: location %q names no zone other machines share: use time.LoadLocation or time.UTC",
				ErrInvalidAlgorithm,
				name,
			)
		}
	}
	return nil
}

// calendarCodes and calendarPeriods give each period a code for a packed
// charge, and back; 0 is no period.
var (
	calendarCodes   = map[string]time.Duration{"day": 1, "week": 2, "month": 3}
	calendarPeriods = map[time.Duration]string{1: "day", 2: "week", 3: "month"}
)

// zones holds every zone a calendar window has charged under, by name (the
// name identifies the zone, as in stores' keys), so that a charge keeps
// its zone as an index: zones are few, and never dropped.
var zones struct {
	sync.Mutex
	index map[string]int64
	all   []*time.Location
}

// calendarZone returns the index in zones of loc's name, adding it: 0 for
// nil, UTC.
func calendarZone(loc *time.Location) int64 {
	if loc == nil {
		return 0
	}
	zones.Lock()
	defer zones.Unlock()
	i, ok := zones.index[loc.String()]
	if !ok {
		if zones.index == nil {
			zones.index = map[string]int64{}
		}
		zones.all = append(zones.all, loc)
		i = int64(len(zones.all))
		zones.index[loc.String()] = i
	}
	return i
}

// zoneAt returns the zone calendarZone gave index i.
func zoneAt(i int64) *time.Location {
	if i == 0 {
		return nil
	}
	zones.Lock()
	defer zones.Unlock()
	return zones.all[i-1]
}
