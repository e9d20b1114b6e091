package replay

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/storememory"
)

// An Alignment says that a workload's timing against its windows' boundaries
// flatters the algorithms that count per window: the same requests, moved
// later by Shift, make some of them admit more in a span of the window.
//
// A fixed window counts per window, and its windows start at multiples of
// their length since the Unix epoch, so what it admits depends on where
// the requests fall against those boundaries. Bursts that start on a
// boundary, such as those of ratewise compare --shape bursts --aligned
// with a period of the window, are never split across two windows, and a
// fixed window holds them to its limit; moved so that they straddle a
// boundary, the same bursts get the limit in each of two windows. The
// trace as it is shows only the first. So does a trace that starts every
// key at once on a boundary, at a rate above the limit.
//
// Compare moves each workload's requests later by alignmentShifts shifts
// spread evenly over its window and replays a fixed window of its limit.
// It counts the trace's timing as flattering when the most that fixed
// window admitted in a span of the window at some shift is over the limit
// where the trace as it is stayed within it, or more than on the trace as
// it is by at least a quarter of the limit: more than the tenth or so that
// chance moves it by on the built-in Poisson workloads. It then replays
// every algorithm of the workload with the requests moved by the shift at
// which the fixed window admitted the most, and lists those whose
// Overshoot rose.
type Alignment struct {
	// Shift is how much later the requests were moved.
	Shift time.Duration `json:"shift_ns"`
	// Rose lists the algorithms whose Overshoot rose with the requests
	// moved, in the order of the workload's rows.
	Rose []Moved `json:"rose"`
}

// Moved is one algorithm's Overshoot on a workload as it is and with its
// requests moved later by an Alignment's Shift.
type Moved struct {
	Algorithm string  `json:"algorithm"`
	Params    string  `json:"params"`
	Overshoot float64 `json:"overshoot"`
	Moved     float64 `json:"moved_overshoot"`
	label     string
}

// alignmentShifts is how many shifts, evenly spaced over a workload's window,
// Compare moves its requests by to check their timing (see Alignment): the
// first is no shift at all, and on a window of a minute they are 5s apart.
const alignmentShifts = 12

// moved is w with its requests moved later by shift: the same requests at
// the same distances from each other, against other window boundaries.
func moved(w *workload.Workload, shift time.Duration) *workload.Workload {
	m := *w
	m.Start = w.Start.Add(shift)
	return &m
}

// fixedWindowDecisions returns the decisions of a fixed window of w's
// limit on w's requests: the limit per window, the windows starting at
// multiples of w.Window since the Unix epoch, as algorithms.FixedWindow
// counts. A request of cost 0 is judged as one of cost 1 and records
// nothing. It is written for obviousness, as Exact is, not to share code
// with package algorithms, so that each checks the other.
func fixedWindowDecisions(w *workload.Workload) []bool {
	type counter struct{ window, count int64 }
	keys := make([]counter, len(w.Keys))
	for k := range keys {
		keys[k].window = -1 << 62 // no window yet
	}
	size, origin := w.Window.Microseconds(), w.Start.UnixMicro()
	allowed := make([]bool, len(w.Requests))
	for i, r := range w.Requests {
		t := origin + r.At.Microseconds()
		window := t / size
		if t%size < 0 {
			window--
		}
		c := &keys[r.Key]
		if c.window != window {
			c.window, c.count = window, 0
		}
		if c.count+max(r.Cost, 1) <= w.Limit {
			allowed[i] = true
			c.count += r.Cost
		}
	}
	return allowed
}

// maxAdmitted is the most that allowed, the decisions on w's requests,
// admitted for one key in any span of w's window (Accuracy.MaxInWindow).
func maxAdmitted(w *workload.Workload, allowed []bool) int64 {
	// Measure's comparison with an exact log is not needed here: compare
	// the decisions with themselves.
	return Measure(w, allowed, allowed).MaxInWindow
}

// flatteringShift returns the shift, of alignmentShifts, at which a fixed
// window of w's limit admits the most in a span of w's window, and whether
// w's own timing flatters that fixed window (see Alignment).
func flatteringShift(w *workload.Workload) (time.Duration, bool) {
	here := maxAdmitted(w, fixedWindowDecisions(w))
	shift, most := time.Duration(0), here
	for i := 1; i < alignmentShifts; i++ {
		s := (w.Window * time.Duration(i) / alignmentShifts).Truncate(time.Microsecond)
		m := moved(w, s)
		if n := maxAdmitted(m, fixedWindowDecisions(m)); n > most {
			shift, most = s, n
		}
	}
	flatters := here <= w.Limit && most > w.Limit || 4*(most-here) >= w.Limit
	return shift, most > here && flatters
}

// checkAlignment returns the Alignment of w, run as jobs, one per row of
// the report; nil when w's timing flatters none of their algorithms.
func checkAlignment(ctx context.Context, w *workload.Workload, jobs []job) (*Alignment, error) {
	shift, flatters := flatteringShift(w)
	if !flatters {
		return nil, nil
	}
	m := moved(w, shift)
	a := &Alignment{Shift: shift}
	names := map[string]int{}
	for _, jb := range jobs {
		names[jb.row.Algorithm]++
	}
	for _, jb := range jobs {
		// Every target makes the memory store's decisions (Compare
		// checks), so one replay on it stands for all.
		allowed, err := replayAll(ctx, storememory.New(), m, jb.alg, nil, 1)
		if err != nil {
			return nil, fmt.Errorf(
				"%s, workload %s moved %v later: %w", jb.alg.Kind().String(), w.Name, shift, err,
			)
		}
		o := float64(maxAdmitted(m, allowed)) / float64(w.Limit)
		if o > jb.row.Overshoot {
			r := Moved{Algorithm: jb.row.Algorithm, Params: jb.row.Params, Overshoot: jb.row.Overshoot, Moved: o,
				label: jb.row.Algorithm}
			if names[r.Algorithm] > 1 {
				r.label += " " + r.Params // as the verdict names it
			}
			a.Rose = append(a.Rose, r)
		}
	}
	if len(a.Rose) == 0 {
		return nil, nil
	}
	return a, nil
}

// checkAlignments sets the Alignment of every verdict of rep whose workload's
// timing flatters some of its algorithms, of workloads run as jobs.
func checkAlignments(ctx context.Context, rep *Report, workloads []*workload.Workload, jobs []job) error {
	for _, w := range workloads {
		var its []job
		for _, jb := range jobs {
			if jb.w == w {
				its = append(its, jb)
			}
		}
		for i := range rep.Verdicts {
			v := &rep.Verdicts[i]
			if v.Workload != w.Name || len(its) == 0 {
				continue
			}
			a, err := checkAlignment(ctx, w, its)
			if err != nil {
				return err
			}
			if a != nil {
				v.Alignment, v.AlignmentText = a, alignmentText(a, *v, w.Window)
			}
		}
	}
	return nil
}

// alignmentText is the sentence about a under the verdict v of a workload
// of window window.
func alignmentText(a *Alignment, v Verdict, window time.Duration) string {
	var rose []string
	held := false
	for i, r := range a.Rose {
		s := fmt.Sprintf("%s to %.2f×", r.label, r.Moved)
		if i == 0 {
			s += " the limit"
		}
		rose = append(rose, s+fmt.Sprintf(" (%.2f× here)", r.Overshoot))
		held = held || v.Held && r.Algorithm == v.Choice.Algorithm && r.Params == v.Choice.Params && r.Moved > 1
	}
	text := fmt.Sprintf(
		"These requests meet the %s windows' boundaries at a timing that flatters counting per window: "+
			"moved %s later, the same requests take %s",
		shortDuration(window),
		shortDuration(a.Shift),
		andList(rose),
	)
	if held {
		text += fmt.Sprintf("; %s held the limit at this timing only", v.Choice.label)
	}
	return text + "."
}

// andList joins items as "a", "a and b" or "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// shortDuration prints d without zero units: "1m", not "1m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
