package algo

import (
	"cmp"
	"slices"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// logMod is what a log's totals wrap at, as in log.lua and log.sql: 2^52,
// so that every total a Lua number holds is exact.
const logMod = 1 << 52

// slidingLogState is the sliding log's per-key state, and, as
// slidingWindowState, the sliding window counter's: the admitted requests
// still counting, and the latest time the key was decided at.
type slidingLogState struct {
	// Records are the admitted requests, oldest first: one per request of
	// any cost for the sliding log (requests stamped the same microsecond
	// share one), one per sub-window for the sliding window counter.
	Records []logRecord
	// Total is the cost admitted up to and including the newest record,
	// counted from the same origin as logRecord.Start, modulo 2^52.
	Total int64
	// Latest is the latest time, in microseconds since the Unix epoch, that
	// a request was admitted at, or denied at with a cost above 1.
	Latest int64
}

// logRecord is admitted cost stamped At (microseconds since the Unix epoch;
// for the sliding window counter, the start of a sub-window). Start is the
// cost admitted before it, modulo 2^52, so its own cost is the next record's
// Start, or the state's Total for the newest, minus Start, modulo 2^52.
// Keeping running totals instead of costs finds the oldest cost still
// counting, and the record a denied request must wait for, by binary search.
// Totals wrap at 2^52, as in the Redis script, where they must stay exact as
// doubles; what counts is always below 2^51, so differences modulo 2^52 are
// exact.
type logRecord struct {
	At    int64
	Start int64
}

// logStep is the decision step of a sliding log whose timestamps are rounded
// down to a multiple of quantum µs: 1 for the exact sliding log, the
// sub-window for the sliding window counter. limit is the limit and w the
// window in µs. It costs O(log n) time for a state of n records, and at most
// one new record per request whatever its cost.
func logStep(
	st *slidingLogState,
	limit, w, quantum int64,
	now time.Time,
	cost int64,
) (*slidingLogState, algorithms.Result) {
	t := micros(now)
	eff := t
	var records []logRecord
	var total int64
	if st != nil {
		eff = max(t, st.Latest)
		records, total = st.Records, st.Total
	}
	stamp := eff - floorMod(eff, quantum)
	res := algorithms.Result{Limit: limit, At: time.UnixMicro(eff)}

	// Records stamped at or before stamp-w have expired, as ZREMRANGEBYSCORE
	// key -inf now-window removes them; they are a prefix.
	first, _ := slices.BinarySearchFunc(
		records,
		stamp-w+1,
		func(r logRecord, at int64) int { return cmp.Compare(r.At, at) },
	)
	live := records[first:]
	var count int64
	if len(live) > 0 {
		count = floorMod(total-live[0].Start, logMod)
	}

	if need := need(cost); count+need > limit {
		// The (count+need-limit)-th oldest unit still counting must expire
		// first. Units are numbered from live[0].Start; the one sought lies
		// in the last record that starts at or before it.
		target := count + need - limit - 1
		base := live[0].Start
		j, found := slices.BinarySearchFunc(live, target, func(r logRecord, s int64) int {
			return cmp.Compare(floorMod(r.Start-base, logMod), s)
		})
		if !found {
			j--
		}
		res.RetryAfter = duration(live[j].At + w - t)
	} else {
		res.Allowed = true
		if cost > 0 {
			switch n := len(live); {
			case n == 0:
				// Nothing counts any more: start again from the front of
				// the memory and from a total of 0.
				live, total = append(records[:0], logRecord{At: stamp}), 0
			case live[n-1].At != stamp:
				live = append(live, logRecord{At: stamp, Start: total})
			}
			// Otherwise the newest record has the same stamp and absorbs
			// the cost.
			total = (total + cost) % logMod
			count += cost
		}
	}
	res.Remaining = max(0, limit-count)
	if count > 0 {
		res.ResetAfter = duration(live[len(live)-1].At + w - t)
	}
	if cost <= 0 {
		return st, res
	}
	if st == nil {
		st = &slidingLogState{}
	}
	st.Records, st.Total = live, total
	if res.Allowed || cost > 1 {
		// A denial of cost 1 drops what expired but leaves the latest time
		// (see Decide).
		st.Latest = eff
	}
	return st, res
}

// logRefund gives back n units charged at time at to a log whose timestamps
// are rounded down to a multiple of quantum µs, with a window of w µs; see
// SlidingLog.Refund. It costs O(log n) time for n records.
func logRefund(st *slidingLogState, w, quantum int64, now, at time.Time, n int64) (*slidingLogState, bool) {
	if st == nil {
		return nil, false
	}
	eff := max(micros(now), st.Latest)
	stamp := eff - floorMod(eff, quantum)
	a := micros(at)
	charged := a - floorMod(a, quantum)
	first, _ := slices.BinarySearchFunc(
		st.Records,
		stamp-w+1,
		func(r logRecord, at int64) int { return cmp.Compare(r.At, at) },
	)
	live := st.Records[first:]
	if charged <= stamp-w || len(live) == 0 {
		return st, false // the charge counts no more
	}
	if newest := live[len(live)-1]; newest.At == charged {
		// The refunded request is in the newest record: take its units off,
		// exactly as if they had never been recorded.
		c := floorMod(st.Total-newest.Start, logMod)
		k := min(n, c)
		if k <= 0 {
			return st, false
		}
		st.Total = floorMod(st.Total-k, logMod)
		if k == c {
			live = live[:len(live)-1]
		}
	} else {
		// Requests were recorded since. Taking the units off a record in
		// the middle would mean rewriting every start after it, and taking
		// them off the newest would free units that count for longer than
		// the refunded ones. The oldest units counting go instead, which
		// never frees more than the refunded request's own: units are
		// numbered from the oldest record's start, and the first one kept,
		// the k-th, lies in the last record that starts at or before it.
		base := live[0].Start
		k := min(n, floorMod(st.Total-base, logMod))
		if k <= 0 {
			return st, false
		}
		j, found := slices.BinarySearchFunc(live, k, func(r logRecord, s int64) int {
			return cmp.Compare(floorMod(r.Start-base, logMod), s)
		})
		if !found {
			j--
		}
		switch live = live[j:]; {
		case k == floorMod(st.Total-base, logMod):
			live = live[:0]
		case !found:
			live[0].Start = floorMod(base+k, logMod)
		}
	}
	// The key's time moves on to eff, as an admission's does: the records
	// that expired by then are gone.
	st.Records, st.Latest = live, eff
	return st, true
}
