package contract

import (
	"fmt"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/exact"
)

// algCase is one algorithm as the suite runs it, with the timings its
// documented semantics predict. Every case uses a limit of 10 per minute and
// starts at 13:59:35, 25s before a minute boundary and 11s into a 12s
// sub-window, so that each algorithm's boundaries fall at different times.
type algCase struct {
	name  string
	kind  *algorithms.Kind
	build func(limit int64, window time.Duration) algorithms.Algorithm
	alg   algorithms.Algorithm // build(limit, window)
	limit int64
	// window is the span the limit is defined over.
	window time.Duration
	start  time.Time

	// After Limit requests at start: firstBack is the wait until a request
	// of cost 1 is admitted again, and backAtFirst how many then are;
	// fullBack is the wait until the key is back at full capacity;
	// costBack(n) is the wait until a request of cost n is admitted.
	firstBack   time.Duration
	backAtFirst int64
	fullBack    time.Duration
	costBack    func(n int64) time.Duration

	// boundaryAdmits is how many of 100 requests at 13:59:59 and 100 at
	// 14:00:00 are admitted with a limit of 100 per minute.
	boundaryAdmits int64

	// windowBound is the most cost any span of length window may hold,
	// given everything admitted, for a limit per window.
	windowBound func(admitted []event, limit int64, window time.Duration) int64

	// model states the algorithm's semantics naively, for matches_model.
	model func(window time.Duration) model

	// atIsWindowStart: a request behind the key's latest time reports the
	// start of the key's window as Result.At, not the latest time (the
	// fixed window, which counts per window and decides the same either
	// way).
	atIsWindowStart bool
}

// event is an admitted request: its time and cost.
type event struct {
	at   time.Time
	cost int64
}

var caseStart = time.Date(2026, 6, 1, 13, 59, 35, 0, time.UTC)

const (
	caseLimit  = 10
	caseWindow = time.Minute
	subWindows = 5 // 12s sub-windows; 5 splits every window of the quotas rule
)

// cases has one case per algorithm of the registry, with the timings its
// family's documented semantics predict (see familyCase).
var cases = func() []algCase {
	var cs []algCase
	for _, k := range algorithms.Kinds() {
		c := familyCase(k)
		c.name, c.kind = k.String(), k
		c.build = func(limit int64, window time.Duration) algorithms.Algorithm {
			alg, err := algo.Nominal(k, limit, window, subWindows)
			if err != nil {
				panic(fmt.Sprintf("contract: %s with %d per %v: %v", k.String(), limit, window, err))
			}
			return alg
		}
		c.limit, c.window, c.start = caseLimit, caseWindow, caseStart
		if algo.FamilyOf(k) == algo.FamilyCalendar {
			// A day: rules that wait out a window, or double it, then
			// reach the next period, or a week.
			c.window = 24 * time.Hour
		}
		c.alg = c.build(caseLimit, c.window)
		cs = append(cs, c)
	}
	return cs
}()

// familyCase returns the expectations for an algorithm of k's family,
// configured by cases: a limit of 10 per minute, or a rate of 10 per minute
// with a burst of 10, and 5 sub-windows for an algorithm that takes them.
func familyCase(k *algorithms.Kind) algCase {
	every := func(d time.Duration) func(int64) time.Duration {
		return func(n int64) time.Duration { return time.Duration(n) * d }
	}
	same := func(d time.Duration) func(int64) time.Duration {
		return func(int64) time.Duration { return d }
	}
	switch algo.FamilyOf(k) {
	case algo.FamilyFixedWindow:
		return algCase{
			// The window [13:59:00, 14:00:00) ends 25s after start.
			firstBack: 25 * time.Second, backAtFirst: caseLimit, fullBack: 25 * time.Second,
			costBack:       same(25 * time.Second),
			boundaryAdmits: 200,
			windowBound:    func(_ []event, limit int64, _ time.Duration) int64 { return 2 * limit },
			model: func(window time.Duration) model {
				return &fixedModel{window: window.Microseconds(), counts: map[int64]int64{}}
			},
			atIsWindowStart: true,
		}
	case algo.FamilyLog:
		if !algo.TakesSubWindows(k) {
			return algCase{
				firstBack: time.Minute, backAtFirst: caseLimit, fullBack: time.Minute,
				costBack:       same(time.Minute),
				boundaryAdmits: 100,
				windowBound:    func(_ []event, limit int64, _ time.Duration) int64 { return limit },
				model: func(window time.Duration) model {
					return &logModel{exact.Log{Window: window}}
				},
			}
		}
		return algCase{
			// start falls in the sub-window [13:59:24, 13:59:36), which
			// drops out one window after it began: 49s after start.
			firstBack: 49 * time.Second, backAtFirst: caseLimit, fullBack: 49 * time.Second,
			costBack: same(49 * time.Second),
			// 13:59:59 and 14:00:00 lie in different sub-windows.
			boundaryAdmits: 100,
			// The documented bound: the limit plus what one sub-window admitted.
			windowBound: func(admitted []event, limit int64, window time.Duration) int64 {
				return limit + maxPerSpan(admitted, window/subWindows)
			},
			model: func(window time.Duration) model {
				return &logModel{exact.Log{Window: window, Quantum: window / subWindows}}
			},
		}
	case algo.FamilyBucket:
		return algCase{
			// 10 per minute: one token every 6s, full after 60s.
			firstBack: 6 * time.Second, backAtFirst: 1, fullBack: time.Minute,
			costBack: every(6 * time.Second),
			// One second refills 100/60 tokens: one whole token.
			boundaryAdmits: 101,
			// The burst plus one window's refill.
			windowBound: func(_ []event, limit int64, _ time.Duration) int64 { return 2 * limit },
			model:       func(time.Duration) model { return newBucketModel() },
		}
	case algo.FamilyCalendar:
		// The case's period is the day in UTC: [2026-06-01, 2026-06-02)
		// ends 10h0m25s after start.
		end := 10*time.Hour + 25*time.Second
		return algCase{
			firstBack: end, backAtFirst: caseLimit, fullBack: end,
			costBack: same(end),
			// 13:59:59 and 14:00:00 lie in one day.
			boundaryAdmits: 100,
			// Two periods meet within any span shorter than a day.
			windowBound: func(_ []event, limit int64, _ time.Duration) int64 { return 2 * limit },
			model: func(time.Duration) model {
				return &calendarModel{counts: map[int64]int64{}}
			},
			atIsWindowStart: true,
		}
	}
	panic("contract: no expectations for the family of " + k.String())
}

// maxPerSpan returns the most cost admitted within one epoch-aligned span of
// length d.
func maxPerSpan(admitted []event, d time.Duration) int64 {
	per := map[int64]int64{}
	var most int64
	for _, ev := range admitted {
		k := ev.at.UnixMicro() / d.Microseconds()
		per[k] += ev.cost
		most = max(most, per[k])
	}
	return most
}

// maxInWindow returns the most cost admitted in any half-open span
// [x, x+d). admitted must be in time order.
func maxInWindow(admitted []event, d time.Duration) int64 {
	events := make([]exact.Event, len(admitted))
	for i, ev := range admitted {
		events[i] = exact.Event{At: sinceEpoch(ev.at), Cost: ev.cost}
	}
	return exact.MaxInWindow(events, d)
}

// withWindow returns cs rebuilt for a limit per window, for runs on a
// store's own clock (see StoreClock); the timings of the clock-driven rules
// do not apply to them.
func withWindow(cs []algCase, window time.Duration) []algCase {
	out := make([]algCase, len(cs))
	for i, c := range cs {
		c.window = window
		if algo.FamilyOf(c.kind) == algo.FamilyCalendar {
			// A week, so that twice the window (a month) is another scope.
			c.window = 7 * 24 * time.Hour
		}
		c.alg = c.build(c.limit, c.window)
		out[i] = c
	}
	return out
}
