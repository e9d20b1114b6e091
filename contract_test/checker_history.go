package contract

import (
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// history keeps what the reference store decided on each state, in the
// order it decided it, to check the promises that hold over a sequence.
type history struct {
	setup  checkerSetup
	states map[refKey]*stateHistory
	// kept is what each admission still counts: its cost less what
	// refunds and cancellations gave back; by step, and for a set the
	// partner's too (step -2-i).
	kept map[int]*admission
	// at is the time each step was made at, on the limiters' clock.
	at map[int]time.Time
}

type stateHistory struct {
	events []event2 // since the last reset, in the order decided
	resets []int    // the steps that reset the state
	// mark is events as the latest admitted Lease left them, which a
	// reset puts back (store.Store.Lease).
	mark []event2
}

type admission struct {
	state refKey
	cost  int64
}

// event2 is one decision on a state: an admission (step, into kept) or a
// decision that charged nothing (step -1), under alg; eff is the time it was
// made at, at the time it counts at (a booking's turn; otherwise eff).
type event2 struct {
	step    int
	alg     algorithms.Algorithm
	eff, at time.Time
}

func newHistory(setup checkerSetup) *history {
	return &history{setup: setup, states: map[refKey]*stateHistory{}, kept: map[int]*admission{}, at: map[int]time.Time{}}
}

func (h *history) state(k refKey) *stateHistory {
	sh := h.states[k]
	if sh == nil {
		sh = &stateHistory{}
		h.states[k] = sh
	}
	return sh
}

// record notes what step i, o, did on the reference, whose results ref
// holds, at the clock reading now, and checks its Results are in range.
// latest is the reference state's latest time before the step, the time a
// booking was decided at if now is behind it.
func (h *history) record(i int, o op, ref *checkerSide, now, latest time.Time) string {
	h.at[i] = now
	if ref.errs[i] != nil {
		return ""
	}
	key := ref.prefix + ":" + o.key
	alg := ref.setup.tiers[ref.tier[o.key]]
	note := func(alg algorithms.Algorithm, res ratewise.Result, step int, cost int64) string {
		if msg := inRange(alg, res, cost, now); msg != "" {
			return msg
		}
		k := keyOf(key, alg)
		if step == -1 || !res.Allowed || cost == 0 {
			step = -1
		} else {
			h.kept[step] = &admission{state: k, cost: cost}
		}
		sh := h.state(k)
		sh.events = append(sh.events, event2{step: step, alg: alg, eff: res.At, at: res.At})
		return ""
	}
	switch o.kind {
	case opAllow:
		return note(alg, ref.results[i].(ratewise.Result), i, o.n)
	case opPeek:
		return note(alg, ref.results[i].(ratewise.Result), -1, 0)
	case opReserve, opLease:
		var res ratewise.Result
		if o.kind == opLease {
			res = ref.results[i].(leased).res
			if algo.FamilyOf(alg.Kind()) != algo.FamilyBucket {
				msg := note(alg, res, i, o.n)
				h.marks(keyOf(key, alg), res)
				return msg
			}
		} else {
			r := ref.results[i].(*ratewise.Reservation)
			res = r.Result()
		}
		if !res.Allowed {
			return note(alg, res, -1, 0)
		}
		if msg := inRange(alg, res, o.n, now); msg != "" {
			return "a booking: " + msg
		}
		k := keyOf(key, alg)
		h.kept[i] = &admission{state: k, cost: o.n}
		eff := now
		if latest.After(eff) {
			eff = latest
		}
		sh := h.state(k)
		sh.events = append(sh.events, event2{step: i, alg: alg, eff: eff, at: res.At})
		if o.kind == opLease {
			h.marks(k, res)
		}
	case opSet:
		sr := ref.results[i].(ratewise.MultiResult)
		for j, a := range []algorithms.Algorithm{alg, h.setup.partner} {
			cost, step := int64(0), -1
			if sr.Allowed {
				cost, step = o.n, i
				if j == 1 {
					step = -2 - i
				}
			}
			if msg := note(a, sr.Results[j], step, cost); msg != "" {
				return fmt.Sprintf("limit %d of a set: %s", j, msg)
			}
		}
	case opRefund, opCancel:
		// What comes back counts no more. A cancellation once the
		// booking's turn has come on the limiter's clock, the booking's
		// time plus its Delay, gives nothing back (Reservation.Cancel).
		if r, ok := ref.results[o.ref].(*ratewise.Reservation); o.kind == opCancel &&
			(!ok || !now.Before(h.at[o.ref].Add(r.Delay()))) {
			return ""
		}
		if a := h.kept[o.ref]; a != nil {
			n := o.n
			if o.kind == opCancel {
				n = a.cost
			}
			a.cost -= min(n, a.cost)
		}
	case opReset:
		sh := h.state(keyOf(key, alg))
		sh.events = slices.Clone(sh.mark)
		sh.resets = append(sh.resets, i)
	}
	return ""
}

// marks notes that a Lease that res answered was made on state k: if it
// admitted, what the state holds is its mark, which a reset puts back.
func (h *history) marks(k refKey, res ratewise.Result) {
	if sh := h.state(k); res.Allowed {
		sh.mark = slices.Clone(sh.events)
	}
}

// resetSince reports whether the state the admission of step i charged
// was reset after it.
func (h *history) resetSince(i int) bool {
	a := h.kept[i]
	if a == nil {
		return false
	}
	for _, r := range h.state(a.state).resets {
		if r > i {
			return true
		}
	}
	return false
}

// inRange checks a Result of alg for a request of cost (0 for none) at now.
func inRange(alg algorithms.Algorithm, res ratewise.Result, cost int64, now time.Time) string {
	limit := algo.MaxCost(alg)
	switch {
	case res.Limit != limit:
		return fmt.Sprintf("%+v: Limit %d, want %d", res, res.Limit, limit)
	case res.Remaining < 0 || res.Remaining > limit:
		return fmt.Sprintf("%+v: Remaining outside [0, %d]", res, limit)
	case res.RetryAfter < 0 || res.ResetAfter < 0:
		return fmt.Sprintf("%+v: a negative wait", res)
	case res.Allowed != (res.RetryAfter == 0):
		return fmt.Sprintf("%+v: Allowed %v with RetryAfter %v", res, res.Allowed, res.RetryAfter)
	case res.At.Before(now):
		return fmt.Sprintf("%+v: At before now %v", res, now)
	case res.Allowed && cost > 0 && res.Remaining > limit-cost:
		return fmt.Sprintf("%+v: Remaining %d after %d of %d", res, res.Remaining, cost, limit)
	}
	if a, c := res.Charged(); res.Allowed && cost > 0 && (a != alg || c != cost) {
		return fmt.Sprintf("%+v says it charged %v, %d; want %v, %d", res, a, c, alg, cost)
	}
	return ""
}

// check checks, for each state, that what was admitted and not given back
// never made any window exceed the limit in force when it was admitted (a
// naive model of each family), and that it replays on an empty key with the
// algorithm's own step.
func (h *history) check() string {
	for k, sh := range h.states {
		if len(sh.events) == 0 {
			continue
		}
		bound := h.windowBound
		if algo.FamilyOf(sh.events[0].alg.Kind()) == algo.FamilyBucket {
			bound = h.bucketBound
		}
		if msg := bound(sh.events); msg != "" {
			return fmt.Sprintf("%s on %s: %s", k.kind, k.scope, msg)
		}
		if msg := h.replay(sh.events); msg != "" {
			return fmt.Sprintf("%s on %s: %s", k.kind, k.scope, msg)
		}
	}
	return ""
}

// windowBound: at each admission, what was admitted before it and not given
// back, with it, in its window (per window for the fixed window, in the
// window ending at it for the logs, by sub-window for the counter), is at
// most its limit.
func (h *history) windowBound(evs []event2) string { return h.windowBoundOver(evs, nil) }

// windowBoundOver is windowBound with each event's limit raised to
// over[i], when over is not nil and that is higher.
func (h *history) windowBoundOver(evs []event2, over []int64) string {
	var seen []event2
	for i, ev := range evs {
		if ev.step == -1 || h.kept[ev.step].cost == 0 {
			continue
		}
		seen = append(seen, ev)
		p := algo.ParamsOf(ev.alg)
		w := p.Window.Microseconds()
		quantum := int64(1)
		if p.SubWindows > 0 {
			quantum = w / p.SubWindows
		}
		stamp := func(t time.Time) int64 { us := t.UnixMicro(); return us - us%quantum }
		var sum int64
		for _, b := range seen {
			if algo.FamilyOf(ev.alg.Kind()) == algo.FamilyFixedWindow {
				if b.at.UnixMicro()/w == ev.at.UnixMicro()/w {
					sum += h.kept[b.step].cost
				}
			} else if s := stamp(b.at); s > stamp(ev.at)-w && s <= stamp(ev.at) {
				sum += h.kept[b.step].cost
			}
		}
		limit := algo.MaxCost(ev.alg)
		if over != nil {
			limit = max(limit, over[i])
		}
		if sum > limit {
			return fmt.Sprintf(
				"its window at the admission of step %d holds %d admitted and not given back, over the limit %d then in force",
				ev.step+1,
				sum,
				limit,
			)
		}
	}
	return ""
}

// bucketBound runs the naive token bucket, in exact rationals and in the
// order decided: tokens used drain at the rate the state was last written
// under, from the time it was written at; a decision under another rate
// count keeps them as they are, and writes; each admission not given back
// must fit the burst in force, a booking by its turn.
func (h *history) bucketBound(evs []event2) string {
	kept := new(big.Rat) // tokens used at last
	count, last := int64(0), int64(-1)
	for _, ev := range evs {
		p := algo.ParamsOf(ev.alg)
		period := p.Window.Microseconds()
		t := ev.eff.UnixMicro()
		used := new(big.Rat).Set(kept)
		if last >= 0 && t > last {
			drained := new(big.Rat).Mul(big.NewRat(count, period), new(big.Rat).SetInt64(t-last))
			if used.Sub(used, drained); used.Sign() < 0 {
				used.SetInt64(0)
			}
		}
		admitted := ev.step != -1 && h.kept[ev.step].cost > 0
		if !admitted && (count == 0 || p.Limit == count || used.Sign() == 0) {
			// An inspection, or a denial: nothing written, unless it
			// converts tokens still used to another rate count (a state
			// whose tokens all drained is no state, and stays as it was,
			// its latest time included).
			continue
		}
		kept, count, last = used, p.Limit, max(t, last)
		if !admitted {
			continue
		}
		used.Add(used, new(big.Rat).SetInt64(h.kept[ev.step].cost))
		// By its turn, a booking's own tokens are all that may exceed
		// the burst at its decision; at the turn, none may.
		atTurn := new(
			big.Rat,
		).Sub(used, new(big.Rat).Mul(big.NewRat(count, period), new(big.Rat).SetInt64(ev.at.UnixMicro()-ev.eff.UnixMicro())))
		if atTurn.Cmp(new(big.Rat).SetInt64(p.Burst)) > 0 {
			return fmt.Sprintf(
				"the admission of step %d, at %v, makes %s tokens used of the burst of %d then in force: more than the "+
					"bucket holds",
				ev.step+1,
				ev.at.Format(time.StampMicro),
				atTurn.FloatString(3),
				p.Burst,
			)
		}
	}
	return ""
}

// replay: what was admitted and not given back replays on an empty key, in
// the order decided, each at the time it counts at, a booking booked again
// for its turn, and for the buckets every other decision at its time too
// (which converts a changed rate).
func (h *history) replay(evs []event2) string {
	var state algo.State
	bucket := algo.FamilyOf(evs[0].alg.Kind()) == algo.FamilyBucket
	for _, ev := range evs {
		cost := int64(0)
		if ev.step != -1 {
			cost = h.kept[ev.step].cost
		}
		var res algorithms.Result
		switch {
		case cost > 0 && ev.at.After(ev.eff):
			state, res, _ = algo.Reserve(ev.alg, state, ev.eff, cost, ev.at.Sub(ev.eff))
		case cost > 0:
			state, res = algo.Decide(ev.alg, state, ev.at, cost)
		case bucket:
			state, _ = algo.Decide(ev.alg, state, ev.eff, 0)
			continue
		default:
			continue
		}
		if !res.Allowed {
			return fmt.Sprintf(
				"the admission of step %d (%d not given back, at %v) does not replay on an empty key with what else was "+
					"admitted before it: more got through than if the refunded units had never been charged",
				ev.step+1,
				cost,
				ev.at.Format(time.StampMicro),
			)
		}
	}
	return ""
}
