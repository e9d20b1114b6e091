package algo

import "time"

// keeps is true: an inspection or a denial changes nothing.
func (fixedWindow) keeps(keyState, time.Time, int64) bool { return true }

// keeps is true for an inspection; for a denial, it reports whether no
// record has expired at now.
func (a slidingLog) keeps(state keyState, now time.Time, cost int64) bool {
	return cost <= 0 ||
		logKeepsDenied(stateAs[*slidingLogState](a.name(), state), int64(a.Window/time.Microsecond), 1, now)
}

// keeps is true for an inspection; for a denial, it reports whether no
// sub-window's record has expired at now.
func (a slidingWindow) keeps(state keyState, now time.Time, cost int64) bool {
	w := int64(a.Window / time.Microsecond)
	return cost <= 0 ||
		logKeepsDenied((*slidingLogState)(stateAs[*slidingWindowState](a.name(), state)), w, w/a.SubWindows, now)
}

// keeps is true for an inspection; for a denial, it reports whether no
// timestamp has expired at now.
func (a compactLog) keeps(state keyState, now time.Time, cost int64) bool {
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
