package algorithms

import (
	"fmt"
	"time"

	"github.com/ratewise/ratewise/internal/algobridge"
)

// CompactLog is the exact sliding log in a ring of timestamps: it decides
// exactly as SlidingLog does, Result for Result, on every input, but keeps
// one 8-byte timestamp per unit of admitted cost still counting, at most
// Limit of them, instead of a sorted set.
//
// Semantics and accuracy: SlidingLog's. No window of length Window ever
// holds more than Limit admitted cost.
//
// Cost: one 8-byte timestamp per unit of admitted cost still counting, in a
// ring that grows by half as the key uses it, up to Limit (or the largest
// Limit the key had while its timestamps counted): on Redis one string, read
// and written a slot at a time with GETRANGE and SETRANGE, 8.2–8.7 B per
// request of cost 1 against a sorted set's 94–106 (go run
// ./bench/cmd/thresholds); in memory a slice of int64. A decision reads O(1) slots, and O(log k) more when k timestamps
// expired since the key's last write, whatever the number of records. A
// request of cost n writes n timestamps, so, unlike SlidingLog, a large
// cost costs more than a small one: choose SlidingLog when single requests
// weigh thousands of units.
//
// Changing Limit keeps the timestamps, as SlidingLog keeps its records; a
// key whose limit was lowered keeps its larger ring until the key is idle
// for a window and its state goes. A now earlier than the latest time the key was decided at
// is decided at that latest time (see Algorithm's decide).
type CompactLog struct {
	Limit  int64
	Window time.Duration
}

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
func (CompactLog) name() string { return compactLogKind.name }

// Kind returns the registry's "compact_log".
func (CompactLog) Kind() *Kind { return compactLogKind }

// params returns the parameters in their shared form.
func (a CompactLog) params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// quota returns the limit per window.
func (a CompactLog) quota() algobridge.Quota {
	return algobridge.Quota{Limit: a.Limit, Window: a.Window}
}

// String describes the algorithm, such as "compact_log 100/1m".
func (a CompactLog) String() string { return describe(a) }

func (CompactLog) sealed() {}

// scope returns the window.
func (a CompactLog) scope() algobridge.Scope { return algobridge.Scope{Window: a.Window} }

// maxCost returns Limit.
func (a CompactLog) maxCost() int64 { return a.Limit }

// CompactLogMaxLimit is the largest Limit a CompactLog takes: 2^20, a ring
// of 8 MiB, which holds 10 requests a second for a day. Above it, the ring
// and the cost of writing a large request outgrow what one Redis string
// and one script should carry; use SlidingLog.
const CompactLogMaxLimit = 1 << 20

// Validate checks Limit in [1, CompactLogMaxLimit] and Window a whole
// number of microseconds in [1µs, 2^50µs].
func (a CompactLog) Validate() error {
	if a.Limit > CompactLogMaxLimit {
		return fmt.Errorf("%w: compact_log keeps one timestamp per unit, at most %d, got a limit of %d", ErrOutOfRange, CompactLogMaxLimit, a.Limit)
	}
	return FixedWindow(a).Validate()
}

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

// decide runs one compact-log step; see Algorithm's decide. It allocates only
// when the ring grows.
func (a CompactLog) decide(state keyState, now time.Time, cost int64) (keyState, Result) {
	st := stateAs[*compactLogState](a.name(), state)
	w := int64(a.Window / time.Microsecond)
	t := micros(now)
	eff := t
	switch {
	case st != nil:
		eff = max(t, st.Latest)
	case cost <= 0:
		// An inspection of a key with no state: nothing to allocate.
		return state, Result{Allowed: true, Limit: a.Limit, Remaining: a.Limit, At: time.UnixMicro(t)}
	default:
		st = &compactLogState{}
	}
	res := Result{Limit: a.Limit, At: time.UnixMicro(eff)}
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
			st.Latest = eff // see Algorithm's decide
		}
	}
	res.Remaining = max(0, a.Limit-count)
	if count > 0 {
		res.ResetAfter = duration(st.at(st.Len-1) + w - t)
	}
	res.charged(compactLogKind, a.params(), cost)
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
// oldest units still counting. See Algorithm's refund.
func (a CompactLog) refund(state keyState, now, at time.Time, n int64) (keyState, bool) {
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
