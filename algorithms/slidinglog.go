package algorithms

import (
	"slices"
	"time"
)

// SlidingLog is the exact sliding window: every admitted unit of cost is a
// record with its timestamp, as in the sorted-set design (score = timestamp).
//
// Semantics: at time t, records whose age is at least Window (timestamp <=
// t-Window) are removed first, as ZREMRANGEBYSCORE key -inf t-Window does; a
// record exactly one window old no longer counts. A request of cost n is then
// admitted when the remaining records plus n are at most Limit, and adds n
// records stamped t. Denied requests are not recorded.
//
// Accuracy: exact. No window of length Window, wherever it starts, ever holds
// more than Limit admitted cost.
//
// Cost: one record per admitted unit, so memory grows with rate × window
// (up to Limit records per key); O(log N) work per decision to find the
// records that expired, plus the removals.
//
// Args: [Limit, Window in µs].
type SlidingLog struct {
	Limit  int64
	Window time.Duration
}

// SlidingLogState holds the timestamps (microseconds since the Unix epoch) of
// the records still in the window, oldest first. A record's position is its
// identity here; a store that needs a unique member per record, such as a
// Redis sorted set, makes one (see storeredis).
type SlidingLogState struct {
	Records []int64
}

// Name returns "sliding_log".
func (SlidingLog) Name() string { return "sliding_log" }

// MaxCost returns Limit.
func (a SlidingLog) MaxCost() int64 { return a.Limit }

// Args returns [Limit, Window in µs].
func (a SlidingLog) Args() []int64 { return []int64{a.Limit, int64(a.Window / time.Microsecond)} }

// Validate checks Limit > 0 and Window a positive whole number of microseconds.
func (a SlidingLog) Validate() error {
	return FixedWindow(a).Validate()
}

// Decide runs one sliding-log step; see Algorithm.Decide.
func (a SlidingLog) Decide(state State, now time.Time, cost int64) (State, Result) {
	w := int64(a.Window / time.Microsecond)
	t := micros(now)
	st, _ := state.(*SlidingLogState)
	if st == nil {
		st = &SlidingLogState{}
	}
	// Records are sorted, so the expired ones are a prefix. A request that
	// consumes drops them first, as ZREMRANGEBYSCORE does; inspecting only
	// skips them.
	expired, _ := slices.BinarySearch(st.Records, t-w+1)
	live := st.Records[expired:]
	if cost > 0 {
		st.Records = live
	}
	count := int64(len(live))

	res := Result{Limit: a.Limit}
	if need := max(cost, 1); count+need > a.Limit {
		// The (count+need-Limit)-th oldest record must expire first.
		res.RetryAfter = duration(live[count+need-a.Limit-1] + w - t)
	} else {
		res.Allowed = true
		if cost > 0 {
			st.Records = insertRecords(live, t, cost)
			live = st.Records
			count += cost
		}
	}
	res.Remaining = a.Limit - count
	if count > 0 {
		res.ResetAfter = duration(live[count-1] + w - t)
	}
	if len(st.Records) == 0 {
		return nil, res
	}
	return st, res
}

// insertRecords adds n records stamped t, keeping records sorted. t is the
// newest time except when the clock stepped back.
func insertRecords(records []int64, t int64, n int64) []int64 {
	at := len(records)
	if at > 0 && records[at-1] > t {
		at, _ = slices.BinarySearch(records, t+1)
	}
	if at == len(records) {
		for range n {
			records = append(records, t)
		}
		return records
	}
	return slices.Insert(records, at, slices.Repeat([]int64{t}, int(n))...)
}
