package algorithms

import "time"

// DenialKeeper is an algorithm that can tell, changing nothing, whether
// Decide denying a request of cost 1 would leave a key's state as it is.
// Such a denial is not remembered (see Algorithm.Decide), but a log's drops
// the records that expired, which a request with an earlier clock reading
// could still count. When the state stays, the denial's Result is what an
// inspection as a request of cost 1 (a cost of -1) returns, so a store may
// decide it as an inspection, without writing, under a read lock. Every
// algorithm of this package is one.
type DenialKeeper interface {
	Algorithm

	// KeepsDenied reports whether Decide(state, now, 1), should it deny,
	// returns state unchanged.
	KeepsDenied(state State, now time.Time) bool
}

var (
	_ DenialKeeper = FixedWindow{}
	_ DenialKeeper = SlidingLog{}
	_ DenialKeeper = CompactLog{}
	_ DenialKeeper = SlidingWindow{}
	_ DenialKeeper = TokenBucket{}
	_ DenialKeeper = GCRA{}
)

// KeepsDenied is true: a denial changes nothing.
func (FixedWindow) KeepsDenied(State, time.Time) bool { return true }

// KeepsDenied is true: a denial of cost 1 changes nothing.
func (TokenBucket) KeepsDenied(State, time.Time) bool { return true }

// KeepsDenied is true: a denial of cost 1 changes nothing.
func (GCRA) KeepsDenied(State, time.Time) bool { return true }

// KeepsDenied reports whether no record has expired at now.
func (a SlidingLog) KeepsDenied(state State, now time.Time) bool {
	return logKeepsDenied(stateAs[*SlidingLogState](a.Name(), state), int64(a.Window/time.Microsecond), 1, now)
}

// KeepsDenied reports whether no sub-window's record has expired at now.
func (a SlidingWindow) KeepsDenied(state State, now time.Time) bool {
	w := int64(a.Window / time.Microsecond)
	return logKeepsDenied((*SlidingLogState)(stateAs[*SlidingWindowState](a.Name(), state)), w, w/a.SubWindows, now)
}

// KeepsDenied reports whether no timestamp has expired at now.
func (a CompactLog) KeepsDenied(state State, now time.Time) bool {
	st := stateAs[*CompactLogState](a.Name(), state)
	if st == nil {
		return true
	}
	eff := max(micros(now), st.Latest)
	return st.Len == 0 || st.at(0) > eff-int64(a.Window/time.Microsecond)
}

// logKeepsDenied reports whether logStep would find no expired record: the
// oldest is stamped after the window before the decision's stamp.
func logKeepsDenied(st *SlidingLogState, w, quantum int64, now time.Time) bool {
	if st == nil || len(st.Records) == 0 {
		return true
	}
	eff := max(micros(now), st.Latest)
	return st.Records[0].At > eff-floorMod(eff, quantum)-w
}
