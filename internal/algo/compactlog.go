package algo

import (
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// compactLog is the step of an algorithms.CompactLog.
type compactLog algorithms.CompactLog

// compactLogState is the compact log's per-key state: a ring of timestamps
// (µs since the Unix epoch), one per unit of admitted cost, oldest at Head,
// Len of them stored (some may have expired), and the latest time the key
// was decided at, as slidingLogState's Latest. len(Ring) is the ring's
// capacity.
type compactLogState struct {
	Ring      []int64
	Head, Len int64
	Latest    int64
}

// name returns "compact_log".
func (compactLog) name() string { return algorithms.CompactLog{}.Kind().String() }

// at returns the i-th timestamp stored, oldest first.
func (st *compactLogState) at(i int64) int64 {
	return st.Ring[(st.Head+i)%int64(len(st.Ring))]
}

// firstLive returns how many of the stored timestamps are at or before
// expired, which are a prefix: a gallop from the oldest, then a bisection,
// so O(log k) reads for k expired.
func (st *compactLogState) firstLive(expired int64) int64 {
	if st.Len == 0 || st.at(0) > expired {
		return 0
	}
	lo, hi := int64(0), st.Len // at(lo) has expired; at(hi) has not, or hi == Len
	for step := int64(1); lo+step < st.Len; step *= 2 {
		if st.at(lo+step) > expired {
			hi = lo + step
			break
		}
		lo += step
	}
	for hi-lo > 1 {
		if mid := lo + (hi-lo)/2; st.at(mid) > expired {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// decide runs one compact-log step; see Decide. It allocates only
// when the ring grows.
func (a compactLog) decide(state keyState, now time.Time, cost int64) (keyState, algorithms.Result) {
	st := stateAs[*compactLogState](a.name(), state)
	w := int64(a.Window / time.Microsecond)
	t := micros(now)
	eff := t
	switch {
	case st != nil:
		eff = max(t, st.Latest)
	case cost <= 0:
		// An inspection of a key with no state: nothing to allocate.
		return state, algorithms.Result{Allowed: true, Limit: a.Limit, Remaining: a.Limit, At: time.UnixMicro(t)}
	default:
		st = &compactLogState{}
	}
	res := algorithms.Result{Limit: a.Limit, At: time.UnixMicro(eff)}
	first := st.firstLive(eff - w)
	count := st.Len - first
	if need := need(cost); count+need > a.Limit {
		// The (count+need-limit)-th oldest unit still counting must expire
		// first.
		res.RetryAfter = duration(st.at(first+count+need-a.Limit-1) + w - t)
	} else {
		res.Allowed = true
	}
	if cost > 0 {
		// A request drops what expired, even when denied, as SlidingLog does.
		st.Head, st.Len = (st.Head+first)%max(int64(len(st.Ring)), 1), count
		if res.Allowed {
			st.push(a.Limit, eff, cost)
			count += cost
		}
		if res.Allowed || cost > 1 {
			st.Latest = eff // see Decide
		}
	}
	res.Remaining = max(0, a.Limit-count)
	if count > 0 {
		res.ResetAfter = duration(st.at(st.Len-1) + w - t)
	}
	if st.Len == 0 && st.Latest == 0 && len(st.Ring) == 0 {
		return state, res // nothing to keep
	}
	return st, res
}

// push appends cost timestamps t, growing the ring, by half at least and up
// to limit (or what it must hold), when they do not fit.
func (st *compactLogState) push(limit, t, cost int64) {
	if size := int64(len(st.Ring)); st.Len+cost > size {
		grown := make([]int64, min(max(limit, st.Len+cost), max(st.Len+cost, size+size/2, 8)))
		for i := range st.Len {
			grown[i] = st.at(i)
		}
		st.Ring, st.Head = grown, 0
	}
	size := int64(len(st.Ring))
	for i := range cost {
		st.Ring[(st.Head+st.Len+i)%size] = t
	}
	st.Len += cost
}

// refund gives back n units charged at time at, as SlidingLog.Refund does:
// off the newest timestamps when they are the request's, otherwise the
// oldest units still counting. See Refund.
func (a compactLog) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
	st := stateAs[*compactLogState](a.name(), state)
	if st == nil {
		return state, false
	}
	w := int64(a.Window / time.Microsecond)
	eff := max(micros(now), st.Latest)
	charged := micros(at)
	first := st.firstLive(eff - w)
	count := st.Len - first
	if charged <= eff-w || count == 0 {
		return state, false
	}
	// count > 0: the ring is not empty, so the modulos below are safe.
	if newest := st.at(st.Len - 1); newest == charged {
		// The units stamped as the newest, found by bisection.
		lo, hi := first-1, st.Len-1 // at(hi) == charged; lo < first or at(lo) < charged
		for hi-lo > 1 {
			if mid := lo + (hi-lo)/2; st.at(mid) == charged {
				hi = mid
			} else {
				lo = mid
			}
		}
		k := min(n, st.Len-hi)
		st.Head, st.Len = (st.Head+first)%int64(len(st.Ring)), count-k
	} else {
		k := min(n, count)
		st.Head, st.Len = (st.Head+first+k)%int64(len(st.Ring)), count-k
	}
	st.Latest = eff
	return st, true
}
