package algorithms

import (
	"strconv"
	"time"
)

// Scope is the part of an algorithm's parameters that gives its state its
// meaning: the window of FixedWindow, SlidingLog and SlidingWindow (with
// SubWindows for the latter), and the rate's period for TokenBucket and
// GCRA. The limit, capacity, burst and rate count are not part of it, so
// they can change while a key keeps what it used.
//
// Scope is comparable, so stores can key state by it without allocating.
type Scope struct {
	Window     time.Duration
	SubWindows int64 // 0 unless the algorithm splits its window
}

// String returns the scope in a compact, exact form used in storage keys:
// the window in its largest whole unit, such as "1m", "90s", "1500ms" or
// "720h", followed by "/" and the sub-windows if there are any ("1m/6").
func (s Scope) String() string {
	str := compactDuration(s.Window)
	if s.SubWindows != 0 {
		str += "/" + strconv.FormatInt(s.SubWindows, 10)
	}
	return str
}

// compactDuration writes d in the largest of h, m, s, ms and us that divides
// it exactly; one unit per value, so two durations differ exactly when their
// strings do.
func compactDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}
