package recommend

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay"
)

// kind is an algorithm as recommend's rules see it: what the registry says
// of it. The rules read its family and properties, never its name, which
// they only print.
type kind struct {
	name       string
	family     algo.Family
	burst      bool // takes a burst
	subWindows bool // takes sub-windows
	// configure returns the kind's algorithm set to limit per window, with
	// opts' burst and sub-windows if it takes them, as replay.Configure does.
	configure func(limit int64, window time.Duration, opts replay.Options) (algorithms.Algorithm, error)
}

// configured is k's algorithm as the recommendation configures it for in.
func (k kind) configured(in Input) (algorithms.Algorithm, error) {
	return k.configure(in.Limit(), in.Window, in.Options())
}

// goCode writes k's algorithm, configured for in, as Go code.
func (k kind) goCode(in Input) (string, error) {
	alg, err := k.configured(in)
	if err != nil {
		return "", err
	}
	return goCode(alg)
}

// catalog is the kinds recommend considers, in the registry's order. Decide
// and Write use the registry's; a test adds kinds the registry does not
// have.
type catalog []kind

// registry is every algorithm of package algorithms' registry.
var registry = catalogOf(algorithms.Kinds())

func catalogOf(ks []*algorithms.Kind) catalog {
	c := make(catalog, 0, len(ks))
	for _, k := range ks {
		name := k.String()
		c = append(
			c,
			kind{name: name, family: algo.FamilyOf(k), burst: algo.TakesBurst(k), subWindows: algo.TakesSubWindows(k),
				configure: func(limit int64, window time.Duration, opts replay.Options) (algorithms.Algorithm, error) {
					return replay.Configure(name, limit, window, opts)
				}},
		)
	}
	return c
}

// A role is what a rule asks of an algorithm, by the model its decisions
// follow (its family) and the parameters it takes. Every kind that fills a
// role answers the rule's question.
type role struct {
	what string // the role in a phrase, for errors
	is   func(kind) bool
}

var (
	// fixedWindow counts per window aligned to the Unix epoch, so that a
	// window of 24h is a UTC day.
	fixedWindow = role{"a fixed window", func(k kind) bool { return k.family == algo.FamilyFixedWindow }}
	// exactLog counts every request over any window.
	exactLog = role{"an exact log", func(k kind) bool { return k.family == algo.FamilyLog && !k.subWindows }}
	// counter is the sliding window counter: a log that rounds times down
	// to its sub-windows, which start at multiples of their length since
	// the Unix epoch.
	counter = role{"a sliding window counter", func(k kind) bool { return k.family == algo.FamilyLog && k.subWindows }}
	// bucket refills at a rate up to a burst.
	bucket = role{"a bucket with a burst", func(k kind) bool { return k.family == algo.FamilyBucket && k.burst }}
	// calendar counts per period of the calendar, a day or a month, which
	// has no window: it answers only a question about a calendar quota
	// (Input.Calendar), and only such a question measures it.
	calendar = role{"a calendar window", func(k kind) bool { return k.family == algo.FamilyCalendar }}
)

// roles are every role the rules use for in: Decide needs figures for at
// least one kind of each. A question about a calendar quota compares the
// calendar window with the windowed roles, which stand in for it.
func roles(in Input) []role {
	rs := []role{fixedWindow, exactLog, counter, bucket}
	if in.Calendar != "" {
		rs = append(rs, calendar)
	}
	return rs
}

// Measures reports whether recommend measures k for in: a kind that takes
// in's limit and counts over a window, or per calendar period when in asks
// about a calendar quota.
func Measures(in Input, k *algorithms.Kind) bool {
	return in.Limit() <= algo.MaxLimit(k) && (in.Calendar != "" || algo.FamilyOf(k) != algo.FamilyCalendar)
}

// measured returns the kinds of cat that fill r and that figs has figures
// for, in the order the rules try them: the latest in the registry first.
//
// The registry does not say which of a role's kinds to prefer. They answer
// the rule's question alike (the compact log decides as the sliding log
// does, GCRA as the token bucket does) and differ in how they keep a key's
// state. Until it says, recommend reads its order as it stands: a role's
// first kind is the classic form, the one the classic decision tree names
// (see classic), and each later one a refinement of it, tried first.
func (cat catalog) measured(r role, figs map[string]Figures) []kind {
	var out []kind
	for _, k := range slices.Backward(cat) {
		if _, ok := figs[k.name]; ok && r.is(k) {
			out = append(out, k)
		}
	}
	return out
}

// preferred is the kind of r the rules try first; r must have one with
// figures (see needs).
func (cat catalog) preferred(r role, figs map[string]Figures) kind { return cat.measured(r, figs)[0] }

// classic is the kind of r the classic decision tree names: the first in
// the registry that has figures (see measured); r must have one.
func (cat catalog) classic(r role, figs map[string]Figures) kind {
	m := cat.measured(r, figs)
	return m[len(m)-1]
}

// needs returns an error unless figs has figures for a kind of every role
// the rules use for in.
func (cat catalog) needs(in Input, figs map[string]Figures) error {
	for _, r := range roles(in) {
		if len(cat.measured(r, figs)) > 0 {
			continue
		}
		var names []string
		for _, k := range cat {
			if r.is(k) {
				names = append(names, k.name)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("recommend: no algorithm is %s", r.what)
		}
		return fmt.Errorf("recommend: no figures for %s (%s)", r.what, strings.Join(names, ", "))
	}
	return nil
}

// with lists the kinds figs has figures for, in the registry's order, as
// tables list them.
func (cat catalog) with(figs map[string]Figures) []kind {
	var out []kind
	for _, k := range cat {
		if _, ok := figs[k.name]; ok {
			out = append(out, k)
		}
	}
	return out
}
