package algorithms

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kind describes one algorithm of the registry: everything a store, the
// HTTP layer, a tool or a test needs to know about an algorithm without
// naming its type. Kinds lists them all; every consumer in ratewise iterates
// over it, so an algorithm added here is run, tested, measured and compared
// everywhere.
//
// An algorithm is one value type in this package, registered once in kinds
// below, and one Lua step, storeredis/internal/scripts/<Name>.lua, which
// the Redis store finds by the Kind's name (see docs/architecture.md). The
// Kinds are shared and read-only: only this package creates them.
type Kind struct {
	name                        string
	burst, subWindows, calendar bool
	build                       func(Params) Algorithm
}

// registered reports whether k was made by the registry, not a zero Kind
// made elsewhere, which has no functions. (A copy of a registered Kind
// builds and recognises the same type, so it is as good.) It runs on every
// decision, through CheckKind, so it looks up nothing.
func (k *Kind) registered() bool { return k != nil && k.build != nil }

// Params is an algorithm's configuration in the one form every algorithm
// shares. Kind.New builds an algorithm from it and Algorithm's params returns
// it, so tools can configure any algorithm, and stores can pass any
// algorithm's parameters to a script, without naming its type.
type Params struct {
	// Limit is the limit per window of the windowed algorithms, and the
	// rate's count of the token bucket and GCRA.
	Limit int64
	// Window is the window, or the rate's period.
	Window time.Duration
	// Burst is the token bucket's capacity and GCRA's burst; 0 for the
	// others.
	Burst int64
	// SubWindows is the sliding window counter's number of sub-windows; 0
	// for the others.
	SubWindows int64
	// Period is the calendar window's period ("day", "week" or "month"),
	// and Location its time zone, nil for UTC; "" and nil for the others,
	// which have a Window instead.
	Period   string
	Location *time.Location
}

// The registry: one entry per algorithm.
var (
	fixedWindowKind = register(Kind{name: "fixed_window"},
		func(p Params) FixedWindow { return FixedWindow{Limit: p.Limit, Window: p.Window} })
	slidingLogKind = register(Kind{name: "sliding_log"},
		func(p Params) SlidingLog { return SlidingLog{Limit: p.Limit, Window: p.Window} })
	compactLogKind = register(Kind{name: "compact_log"},
		func(p Params) CompactLog { return CompactLog{Limit: p.Limit, Window: p.Window} })
	slidingWindowKind = register(Kind{name: "sliding_window", subWindows: true},
		func(p Params) SlidingWindow {
			return SlidingWindow{Limit: p.Limit, Window: p.Window, SubWindows: p.SubWindows}
		})
	tokenBucketKind = register(Kind{name: "token_bucket", burst: true},
		func(p Params) TokenBucket {
			return TokenBucket{Capacity: p.Burst, Refill: Rate{Count: p.Limit, Period: p.Window}}
		})
	gcraKind = register(Kind{name: "gcra", burst: true},
		func(p Params) GCRA { return GCRA{Rate: Rate{Count: p.Limit, Period: p.Window}, Burst: p.Burst} })
	calendarWindowKind = register(Kind{name: "calendar_window", calendar: true},
		func(p Params) CalendarWindow {
			return CalendarWindow{Limit: p.Limit, Period: p.Period, Location: p.Location}
		})
)

// register completes a registry entry for the algorithm type A, built from
// Params by build.
func register[A Algorithm](k Kind, build func(Params) A) *Kind {
	k.build = func(p Params) Algorithm { return build(p) }
	return &k
}

// kinds is the registry in the order tools show the algorithms.
var kinds = []*Kind{
	fixedWindowKind, slidingLogKind, compactLogKind, slidingWindowKind, tokenBucketKind, gcraKind, calendarWindowKind,
}

// kindByName indexes kinds by Name.
var kindByName = func() map[string]*Kind {
	m := make(map[string]*Kind, len(kinds))
	for _, k := range kinds {
		m[k.name] = k
	}
	return m
}()

// Kinds returns every algorithm, in the order tools show them. The slice is
// a copy.
func Kinds() []*Kind { return append([]*Kind(nil), kinds...) }

// names returns every algorithm's Name, in the order of Kinds.
func names() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// Lookup returns the Kind named name, or an error wrapping
// ErrInvalidAlgorithm that lists the known names.
func Lookup(name string) (*Kind, error) {
	if k, ok := kindByName[name]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: unknown name %q (known: %s)", ErrInvalidAlgorithm, name, strings.Join(names(), ", "))
}

// New returns the algorithm of this kind configured by p, validated. A
// Burst, SubWindows, Period or Location given to a kind that does not take
// it, and a Window given to the calendar window, which has a Period
// instead, is an error wrapping ErrInvalidAlgorithm, not ignored.
func (k *Kind) New(p Params) (Algorithm, error) {
	if !k.registered() {
		return nil, fmt.Errorf("%w: a Kind not from the registry", ErrInvalidAlgorithm)
	}
	if !k.burst && p.Burst != 0 {
		return nil, fmt.Errorf("%w: %s takes no burst, got %d", ErrInvalidAlgorithm, k.name, p.Burst)
	}
	if !k.subWindows && p.SubWindows != 0 {
		return nil, fmt.Errorf("%w: %s takes no sub-windows, got %d", ErrInvalidAlgorithm, k.name, p.SubWindows)
	}
	switch {
	case k.calendar && p.Window != 0:
		return nil, fmt.Errorf("%w: %s takes a period, not a window, got %v", ErrInvalidAlgorithm, k.name, p.Window)
	case !k.calendar && (p.Period != "" || p.Location != nil):
		return nil, fmt.Errorf("%w: %s takes no calendar period or location", ErrInvalidAlgorithm, k.name)
	}
	alg := k.build(p)
	if err := alg.Validate(); err != nil {
		return nil, err
	}
	return alg, nil
}

// String returns the kind's name, a stable identifier such as "gcra": it
// names the state in stores, the Lua step and the algorithm on command
// lines.
func (k *Kind) String() string { return k.name }

// text returns the parameters in the form every algorithm's String
// shares: the limit per window (or the rate), then the burst and the
// sub-windows when they are set, such as "10/1s burst 20" or
// "100/1m in 6 sub-windows"; for a calendar period, the limit per period
// and the zone unless it is UTC, such as "1000/month in Europe/Berlin".
func (p Params) text() string {
	if p.Period != "" {
		s := strconv.FormatInt(p.Limit, 10) + "/" + p.Period
		if p.Location != nil && p.Location != time.UTC && p.Location.String() != "UTC" {
			s += " in " + p.Location.String()
		}
		return s
	}
	s := strconv.FormatInt(p.Limit, 10) + "/" + compactDuration(p.Window)
	if p.Burst != 0 {
		s += " burst " + strconv.FormatInt(p.Burst, 10)
	}
	if p.SubWindows != 0 {
		s += " in " + strconv.FormatInt(p.SubWindows, 10) + " sub-windows"
	}
	return s
}

// describe is an algorithm's String: its kind, then its Params.
func describe(alg Algorithm) string { return alg.Kind().name + " " + alg.params().text() }

// compactDuration writes d in the largest of h, m, s, ms and us that
// divides it exactly, one unit per value, so that two durations differ
// exactly when their strings do: "1m", "90s", "1500ms". Stores name a
// state's scope the same way (internal/algo's Scope.String).
func compactDuration(d time.Duration) string {
	for _, u := range [...]struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
