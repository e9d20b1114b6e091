package contract

import (
	"math/big"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/exact"
)

// A model is a deliberately naive, obviously correct statement of an
// algorithm's documented semantics: it keeps every admitted request and
// recounts from scratch, or uses exact rationals. The matches_model rule
// compares a store's decisions with it step by step.
type model interface {
	// decide returns whether a request of cost (0 to inspect) is admitted
	// at t under alg, and what remains afterwards. Times never go
	// backwards. alg may differ from call to call in its limit, burst,
	// capacity or rate count, never in its scope.
	decide(alg algorithms.Algorithm, t time.Time, cost int64) (allowed bool, remaining int64)
}

// limitOf is the limit, capacity or burst of alg.
func limitOf(alg algorithms.Algorithm) int64 { return algo.MaxCost(alg) }

// logModel is the sliding log, exact or with times rounded down to a
// sub-window (the sliding window counter): the reference log of package
// exact.
type logModel struct{ exact.Log }

func (m *logModel) decide(alg algorithms.Algorithm, t time.Time, cost int64) (bool, int64) {
	return m.Decide(limitOf(alg), sinceEpoch(t), cost)
}

// sinceEpoch is t as a duration since the Unix epoch, to the microsecond.
func sinceEpoch(t time.Time) time.Duration { return time.Duration(t.UnixMicro()) * time.Microsecond }

// fixedModel counts per window index.
type fixedModel struct {
	window int64 // µs
	counts map[int64]int64
}

func (m *fixedModel) decide(alg algorithms.Algorithm, t time.Time, cost int64) (bool, int64) {
	limit := limitOf(alg)
	w := t.UnixMicro() / m.window
	if m.counts[w]+max(cost, 1) > limit {
		return false, max(0, limit-m.counts[w])
	}
	m.counts[w] += cost
	return true, limit - m.counts[w]
}

// calendarModel counts per period of the calendar, each found from the
// calendar in time.Date's terms: the first instant of the day, of the
// Monday, or of the 1st, in the algorithm's zone.
type calendarModel struct {
	counts map[int64]int64 // by the period's first instant, µs
}

func (m *calendarModel) decide(alg algorithms.Algorithm, t time.Time, cost int64) (bool, int64) {
	a := alg.(algorithms.CalendarWindow)
	p := calendarStart(a, t).UnixMicro()
	if m.counts[p]+max(cost, 1) > a.Limit {
		return false, max(0, a.Limit-m.counts[p])
	}
	m.counts[p] += cost
	return true, a.Limit - m.counts[p]
}

// calendarStart is the first instant of the period t is in: the latest
// midnight of a day (of a Monday, of a 1st) in a's zone at or before t,
// found by walking back day by day, with no arithmetic on offsets.
func calendarStart(a algorithms.CalendarWindow, t time.Time) time.Time {
	loc := a.Location
	if loc == nil {
		loc = time.UTC
	}
	day := t.In(loc)
	for {
		y, mo, d := day.Date()
		if a.Period == "day" || a.Period == "week" && day.Weekday() == time.Monday || a.Period == "month" && d == 1 {
			// The day's first instant: midnight, or when the clocks jump
			// over it, the first instant whose date is the day's.
			first := time.Date(y, mo, d, 0, 0, 0, 0, loc)
			for first.In(loc).Day() != d {
				first = first.Add(time.Minute)
			}
			return first
		}
		day = time.Date(y, mo, d-1, 12, 0, 0, 0, loc)
	}
}

// bucketModel is the token bucket in exact rationals, kept as the tokens
// used: they drain at the rate the state was written under, a request is
// admitted when what is used plus its cost is at most the burst, and what
// was used carries over when the burst changes. When the rate count
// changes, the tokens used at the decision's time are kept, exactly, and
// from then on drain at the new rate; any decision under the new rate
// makes that change, an inspection or a denial of cost 1 included, as
// documented. GCRA is documented to admit exactly the same.
type bucketModel struct {
	count int64    // the rate count the state was written under
	used  *big.Rat // tokens used as of last
	last  int64    // µs of the last decision remembered; -1 before any
}

func newBucketModel() *bucketModel { return &bucketModel{used: new(big.Rat), last: -1} }

// rateOf returns a bucket's burst and rate.
func rateOf(alg algorithms.Algorithm) (int64, algorithms.Rate) {
	p := algo.ParamsOf(alg)
	return p.Burst, algorithms.Rate{Count: p.Limit, Period: p.Window}
}

func (m *bucketModel) decide(alg algorithms.Algorithm, t time.Time, cost int64) (bool, int64) {
	burst, rate := rateOf(alg)
	now := t.UnixMicro()
	used := new(big.Rat)
	converted := false
	if m.last >= 0 {
		// Drained at the state's own rate since it was written.
		drained := new(big.Rat).Mul(big.NewRat(m.count, rate.Period.Microseconds()), new(big.Rat).SetInt64(now-m.last))
		if used.Sub(m.used, drained); used.Sign() < 0 {
			used.SetInt64(0)
		}
		converted = rate.Count != m.count
	}
	full := new(big.Rat).SetInt64(burst)
	allowed := new(big.Rat).Add(used, new(big.Rat).SetInt64(max(cost, 1))).Cmp(full) <= 0
	if allowed {
		used.Add(used, new(big.Rat).SetInt64(max(cost, 0)))
	}
	if cost > 0 && (allowed || cost > 1) || converted {
		// What the algorithm keeps: a denial of cost 1 and an inspection
		// are not remembered, unless they convert the rate.
		m.used, m.last, m.count = used, now, rate.Count
	}
	left := new(big.Rat).Sub(full, used)
	if left.Sign() < 0 {
		return allowed, 0
	}
	return allowed, new(big.Int).Quo(left.Num(), left.Denom()).Int64()
}
