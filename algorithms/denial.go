package algorithms

import "time"

// keeper is an algorithm that can tell, changing nothing, whether a
// decision that writes nothing in the common case would leave a key's
// state as it is: an inspection (a cost of 0 or less), or a denial of cost
// 1. Neither is remembered (see Algorithm's decide), but a log's denial drops
// the records that expired, which a request with an earlier clock reading
// could still count, and a token bucket's or GCRA's state written under
// another rate count is converted by any decision, an inspection included.
// When the state stays, a denial's Result is what an inspection as a
// request of cost 1 (a cost of -1) returns, so a store may decide either
// as an inspection, without writing, under a read lock. Every algorithm of
// this package is one.
type keeper interface {
	Algorithm

	// Keeps reports whether Decide(state, now, cost) leaves state
	// unchanged when cost is at most 0, or when cost is 1 and the request
	// is denied. It must not be asked about another cost.
	keeps(state keyState, now time.Time, cost int64) bool
}

var (
	_ keeper = FixedWindow{}
	_ keeper = SlidingLog{}
	_ keeper = CompactLog{}
	_ keeper = SlidingWindow{}
	_ keeper = TokenBucket{}
	_ keeper = GCRA{}
)

// keeps is true: an inspection or a denial changes nothing.
func (FixedWindow) keeps(keyState, time.Time, int64) bool { return true }

// keeps reports whether the state was written under this rate count, or
// holds no tokens at now: one written under another that still does is
// converted (see TokenBucket).
func (a TokenBucket) keeps(state keyState, now time.Time, _ int64) bool {
	_, _, converted := newBucket(a.Capacity, a.Refill).usedAt((*bucketState)(stateAs[*tokenBucketState](a.name(), state)), now)
	return !converted
}

// keeps reports whether the state was written under this rate count, or
// holds no tokens at now: one written under another that still does is
// converted (see GCRA).
func (a GCRA) keeps(state keyState, now time.Time, _ int64) bool {
	_, _, converted := newBucket(a.Burst, a.Rate).usedAt((*bucketState)(stateAs[*gcraState](a.name(), state)), now)
	return !converted
}

// keeps is true for an inspection; for a denial, it reports whether no
// record has expired at now.
func (a SlidingLog) keeps(state keyState, now time.Time, cost int64) bool {
	return cost <= 0 || logKeepsDenied(stateAs[*slidingLogState](a.name(), state), int64(a.Window/time.Microsecond), 1, now)
}

// keeps is true for an inspection; for a denial, it reports whether no
// sub-window's record has expired at now.
func (a SlidingWindow) keeps(state keyState, now time.Time, cost int64) bool {
	w := int64(a.Window / time.Microsecond)
	return cost <= 0 || logKeepsDenied((*slidingLogState)(stateAs[*slidingWindowState](a.name(), state)), w, w/a.SubWindows, now)
}

// keeps is true for an inspection; for a denial, it reports whether no
// timestamp has expired at now.
func (a CompactLog) keeps(state keyState, now time.Time, cost int64) bool {
	st := stateAs[*compactLogState](a.name(), state)
	if cost <= 0 || st == nil {
		return true
	}
	eff := max(micros(now), st.Latest)
	return st.Len == 0 || st.at(0) > eff-int64(a.Window/time.Microsecond)
}

// logKeepsDenied reports whether logStep would find no expired record: the
// oldest is stamped after the window before the decision's stamp.
func logKeepsDenied(st *slidingLogState, w, quantum int64, now time.Time) bool {
	if st == nil || len(st.Records) == 0 {
		return true
	}
	eff := max(micros(now), st.Latest)
	return st.Records[0].At > eff-floorMod(eff, quantum)-w
}
