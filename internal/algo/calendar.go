package algo

import (
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// calendarWindow is the step of an algorithms.CalendarWindow.
//
// The step itself knows no calendar: it takes the boundary B between two
// periods nearest the caller's now and the lengths of the periods on either
// side of it (CalendarBounds), and finds the period of its own now among
// those two. The Lua and SQL steps do the same with the bounds the caller
// passes, so that a store deciding on its own clock, which may differ a
// little from the caller's, still counts in the period its own now is in.
type calendarWindow algorithms.CalendarWindow

// calendarState is the count admitted in the period [Start, End), in
// microseconds since the Unix epoch. The state keeps its period's end,
// which a step whose now is in an earlier period (a clock that stepped
// back) cannot find from its bounds.
type calendarState struct {
	Start, End, Count int64
}

// CalendarPacking is how the lengths of the two periods about a boundary
// travel to the Lua and SQL steps in one number: before<<22 | after, each
// in whole seconds (a zone's offsets are whole seconds, so its boundaries
// are too). A period of the calendar lasts at most 31 days and a clock
// change, under 2^22 seconds (48 days), so the number stays below 2^44.
const CalendarPacking = 1 << 22

// CalendarBounds returns, for a calendar window at now (µs since the Unix
// epoch), the boundary b between two of its periods that is nearest now,
// and the lengths before and after of the periods that end and start at
// b, in µs. now is in [b-before, b+after), at most half a period from b.
func CalendarBounds(a algorithms.CalendarWindow, now int64) (b, before, after int64) {
	loc := a.Location
	if loc == nil {
		loc = time.UTC
	}
	start := periodStart(a.Period, time.UnixMicro(now).In(loc), 0)
	end := periodStart(a.Period, start, 1)
	if now-start.UnixMicro() <= end.UnixMicro()-now {
		prev := periodStart(a.Period, start, -1)
		return start.UnixMicro(), start.UnixMicro() - prev.UnixMicro(), end.UnixMicro() - start.UnixMicro()
	}
	next := periodStart(a.Period, end, 1)
	return end.UnixMicro(), end.UnixMicro() - start.UnixMicro(), next.UnixMicro() - end.UnixMicro()
}

// CalendarParams returns the bounds as the Lua and SQL steps take them: b
// and the two lengths packed into one number (see CalendarPacking).
func CalendarParams(a algorithms.CalendarWindow, now int64) (b, packed int64) {
	b, before, after := CalendarBounds(a, now)
	return b, before/1e6*CalendarPacking + after/1e6
}

// periodStart returns the first instant of the period n periods after the
// one that t, a time in the calendar's location, is in.
func periodStart(period string, t time.Time, n int) time.Time {
	y, m, d := t.Date()
	switch period {
	case "day":
		d += n
	case "week":
		d += n*7 - (int(t.Weekday())+6)%7 // back to Monday
	default: // "month"
		m, d = m+time.Month(n), 1
	}
	return firstInstant(y, m, d, t.Location())
}

// firstInstant is the first instant of the day y-m-d (normalized as
// time.Date does) in loc: its midnight, or, where a clock change skips
// midnight, the instant the clocks jump to. time.Date resolves a skipped
// midnight to an instant of the day before in some zones, such as
// America/Sao_Paulo's; ZoneBounds then gives the change's instant.
func firstInstant(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	wy, wm, wd := time.Date(y, m, d, 12, 0, 0, 0, time.UTC).Date()
	if ty, tm, td := t.Date(); ty != wy || tm != wm || td != wd {
		if _, end := t.ZoneBounds(); !end.IsZero() {
			return end
		}
	}
	return t
}

// periodAt returns the period [start, end) of the two about b that t is in,
// and ok false for a t in neither.
func periodAt(t, b, before, after int64) (start, end int64, ok bool) {
	switch {
	case t >= b && t < b+after:
		return b, b + after, true
	case t < b && t >= b-before:
		return b - before, b, true
	}
	return 0, 0, false
}

// name returns "calendar_window".
func (calendarWindow) name() string { return algorithms.CalendarWindow{}.Kind().String() }

// keeps is true: an inspection or a denial changes nothing.
func (calendarWindow) keeps(keyState, time.Time, int64) bool { return true }

// refund takes n off the count, not below zero, when at is in the key's
// period and that period is not over at now.
func (a calendarWindow) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := stateAs[*calendarState](a.name(), state)
	t, n0 := micros(at), micros(now)
	if st == nil || t < st.Start || t >= st.End || n0 >= st.End || st.Count <= 0 {
		return state, false
	}
	st.Count -= min(n, st.Count)
	return st, true
}

// decide runs one calendar step at now, on the bounds now itself gives.
func (a calendarWindow) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	b, before, after := CalendarBounds(algorithms.CalendarWindow(a), micros(now))
	st, res := a.step(stateAs[*calendarState](a.name(), state), micros(now), cost, b, before, after)
	if st == nil {
		return nil, res
	}
	return st, res
}

// step is the step the Lua and SQL steps mirror: FixedWindow's, on the
// period of now among the two about b. It returns st, updated when a
// request is admitted, or a new state if st was nil. now must be in one of
// the two periods.
func (a calendarWindow) step(
	st *calendarState,
	now, cost, b, before, after int64,
) (*calendarState, algorithms.Result) {
	start, end, _ := periodAt(now, b, before, after)
	at := now
	var count int64
	if st != nil {
		// A period later than now's means the clock stepped back: keep
		// counting in it, so nothing extra gets through.
		if st.Start > start {
			start, end, at = st.Start, st.End, st.Start
		}
		if st.Start == start {
			count = st.Count
		}
	}
	res := algorithms.Result{Limit: a.Limit, At: time.UnixMicro(at)}
	if count+need(cost) <= a.Limit {
		res.Allowed = true
		if cost > 0 {
			count += cost
			if st == nil {
				st = &calendarState{}
			}
			*st = calendarState{Start: start, End: end, Count: count}
		}
	} else {
		res.RetryAfter = duration(end - now)
	}
	res.Remaining = max(0, a.Limit-count)
	if count > 0 {
		res.ResetAfter = duration(end - now)
	}
	return st, res
}

// calendarScope is a calendar window's Scope: its period's code, negated,
// as Window, and its zone's index in zoneNames as SubWindows, 0 for UTC.
// Its String is the period, then "@" and the zone's name unless it is UTC,
// such as "month@Europe/Berlin".
func calendarScope(a algorithms.CalendarWindow) Scope {
	return Scope{Window: -periodCodes[a.Period], SubWindows: zoneIndex(a.Location)}
}

// periodCodes gives each period a code for its Scope.
var periodCodes = map[string]time.Duration{"day": 1, "week": 2, "month": 3}

// appendCalendarScope appends s's String to b: see calendarScope.
func appendCalendarScope(b []byte, s Scope) []byte {
	b = append(b, [...]string{"", "day", "week", "month"}[min(max(-s.Window, 0), 3)]...)
	if s.SubWindows > 0 {
		zoneNames.Lock()
		name := zoneNames.all[s.SubWindows-1]
		zoneNames.Unlock()
		b = append(append(b, '@'), name...)
	}
	return b
}

// zoneNames indexes the names of the zones calendar windows name, but UTC,
// from 1: zones are few, and never dropped.
var zoneNames struct {
	sync.Mutex
	index map[string]int64
	all   []string
}

// zoneIndex returns the index of loc's name in zoneNames, adding it: 0
// for nil and UTC.
func zoneIndex(loc *time.Location) int64 {
	if loc == nil || loc == time.UTC || loc.String() == "UTC" {
		return 0
	}
	name := loc.String()
	zoneNames.Lock()
	defer zoneNames.Unlock()
	i, ok := zoneNames.index[name]
	if !ok {
		if zoneNames.index == nil {
			zoneNames.index = map[string]int64{}
		}
		zoneNames.all = append(zoneNames.all, name)
		i = int64(len(zoneNames.all))
		zoneNames.index[name] = i
	}
	return i
}

// longestPeriod is the longest each period lasts, a clock change
// included: a calendar window's Quota.Window, the longest an idle key
// takes to get its quota back.
var longestPeriod = map[string]time.Duration{
	"day":   25 * time.Hour,
	"week":  7*24*time.Hour + time.Hour,
	"month": 31*24*time.Hour + time.Hour,
}

// calendarSkew matches the error the Lua and SQL steps raise for a now in
// neither of the periods about the caller's boundary.
var calendarSkew = regexp.MustCompile(`calendar_window: the store's clock reads (\d+)us, more than half a period`)

// CalendarSkew reports whether err is a calendar step's refusal of a now
// in neither of the periods about the boundary the caller passed (a store
// whose clock is more than half a period from its caller's), and returns
// the store's now, which the caller then finds the periods about.
func CalendarSkew(err error) (time.Time, bool) {
	if err == nil {
		return time.Time{}, false
	}
	m := calendarSkew.FindStringSubmatch(err.Error())
	if m == nil {
		return time.Time{}, false
	}
	us, perr := strconv.ParseInt(m[1], 10, 64)
	if perr != nil {
		return time.Time{}, false
	}
	return time.UnixMicro(us), true
}
