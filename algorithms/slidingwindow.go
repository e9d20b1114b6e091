package algorithms

import (
	"fmt"
	"slices"
	"time"
)

// SlidingWindow is the sliding window counter: Window is split into
// SubWindows sub-windows of equal length, aligned to the Unix epoch, and the
// key keeps one counter per sub-window instead of one record per request.
//
// Semantics: at time t, the counters of the SubWindows most recent
// sub-windows, the current one included, are summed. A request of cost n is
// admitted when that sum plus n is at most Limit, and adds n to the current
// sub-window's counter. It behaves exactly like a SlidingLog whose timestamps
// are rounded down to the start of their sub-window: a request stops counting
// Window after the start of its sub-window, which is between Window-Window/
// SubWindows and Window after it was made.
//
// Accuracy: approximate, and only ever too lenient. At each decision the sum
// counts a subset of what an exact sliding log would count, so it never denies
// what the log would admit on the same history. Because requests expire up to
// one sub-window early, any span of length Window can hold at most Limit plus
// the cost admitted in a single sub-window. The worst case is 2×Limit: Limit
// admitted at the very end of a sub-window and Limit again Window-Window/
// SubWindows later, when that sub-window has dropped out. Under traffic spread
// evenly the excess is about Limit/SubWindows. More sub-windows shrink the
// typical error, not the adversarial one.
//
// Cost: at most SubWindows counters per key (O(N) memory); O(N) work per
// decision.
//
// Args: [Limit, Window in µs, SubWindows].
type SlidingWindow struct {
	Limit      int64
	Window     time.Duration
	SubWindows int64
}

// SlidingWindowState holds the non-zero sub-window counters, oldest first.
type SlidingWindowState struct {
	Buckets []Bucket
}

// Bucket is the cost admitted in the sub-window starting at Start
// (microseconds since the Unix epoch).
type Bucket struct {
	Start int64
	Count int64
}

// Name returns "sliding_window".
func (SlidingWindow) Name() string { return "sliding_window" }

// MaxCost returns Limit.
func (a SlidingWindow) MaxCost() int64 { return a.Limit }

// Args returns [Limit, Window in µs, SubWindows].
func (a SlidingWindow) Args() []int64 {
	return []int64{a.Limit, int64(a.Window / time.Microsecond), a.SubWindows}
}

// Validate checks Limit > 0, Window a positive whole number of microseconds,
// SubWindows >= 1, and that Window splits evenly into SubWindows sub-windows
// of at least 1ms.
func (a SlidingWindow) Validate() error {
	if err := (FixedWindow{Limit: a.Limit, Window: a.Window}).Validate(); err != nil {
		return err
	}
	if a.SubWindows < 1 {
		return fmt.Errorf("%w, got %d sub-windows", ErrInvalidSubWindows, a.SubWindows)
	}
	if a.Window%time.Duration(a.SubWindows) != 0 || a.Window/time.Duration(a.SubWindows) < time.Millisecond ||
		(a.Window/time.Duration(a.SubWindows))%time.Microsecond != 0 {
		return fmt.Errorf("%w, got window %v into %d sub-windows", ErrInvalidSubWindows, a.Window, a.SubWindows)
	}
	return nil
}

// Decide runs one sliding-window-counter step; see Algorithm.Decide.
func (a SlidingWindow) Decide(state State, now time.Time, cost int64) (State, Result) {
	w := int64(a.Window / time.Microsecond)
	sub := w / a.SubWindows
	t := micros(now)
	cur := t - floorMod(t, sub)
	st, _ := state.(*SlidingWindowState)
	if st == nil {
		st = &SlidingWindowState{}
	}
	// A sub-window starting at or before cur-w has dropped out. A request
	// that consumes deletes those; inspecting only skips them.
	expired := 0
	for expired < len(st.Buckets) && st.Buckets[expired].Start <= cur-w {
		expired++
	}
	live := st.Buckets[expired:]
	if cost > 0 {
		st.Buckets = live
	}
	var count int64
	for _, b := range live {
		count += b.Count
	}

	res := Result{Limit: a.Limit}
	if need := max(cost, 1); count+need > a.Limit {
		// Wait until enough of the oldest sub-windows drop out.
		excess, i := count+need-a.Limit, 0
		for ; excess > live[i].Count; i++ {
			excess -= live[i].Count
		}
		res.RetryAfter = duration(live[i].Start + w - t)
	} else {
		res.Allowed = true
		if cost > 0 {
			st.Buckets = addToBucket(live, cur, cost)
			live = st.Buckets
			count += cost
		}
	}
	res.Remaining = a.Limit - count
	if count > 0 {
		res.ResetAfter = duration(live[len(live)-1].Start + w - t)
	}
	if len(st.Buckets) == 0 {
		return nil, res
	}
	return st, res
}

// addToBucket adds n to the bucket starting at start, creating it in order.
// start is the newest bucket except when the clock stepped back.
func addToBucket(buckets []Bucket, start, n int64) []Bucket {
	i, found := slices.BinarySearchFunc(buckets, start, func(b Bucket, s int64) int {
		switch {
		case b.Start < s:
			return -1
		case b.Start > s:
			return 1
		}
		return 0
	})
	if found {
		buckets[i].Count += n
		return buckets
	}
	return slices.Insert(buckets, i, Bucket{Start: start, Count: n})
}
