package replay

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// A Verdict answers, for one workload, the question a comparison is run
// for: which algorithm held the workload's limit, never admitting more than
// it in any span of its window (Overshoot at most 1.00), at the least cost.
// When none held it, the Verdict names the one that came closest.
//
// Cost is ranked by, in order:
//
//  1. memory per key on the most production-like store that measured it:
//     redis, cluster or postgres, else the memory store (miniredis measures
//     none, see Miniredis). Figures within 2%, and at least 1 byte, of the
//     least of them count as equal, and so on up from the least figure
//     above them, for memory is measured no closer than that: 63.3 and 63.6
//     bytes per key are one cost, whatever the run;
//  2. store commands per decision, rounded to hundredths, on the most
//     production-like store that counts them: redis or cluster, else
//     miniredis;
//  3. false denials, fewer first;
//  4. the algorithm's name, then its parameters.
//
// A figure that was not measured ranks after every one that was. For
// example, if gcra and token_bucket both hold the limit in 63 bytes per key
// and 2.00 commands per decision with no false denials, gcra is chosen by
// its name; if fixed_window takes as much memory and 1.67 commands but
// admits twice the limit across a window boundary, it is Cheaper, with an
// Overshoot of 2.00. Only an algorithm that costs less by 1 or 2 is
// Cheaper, not one that merely denies less or comes first by name.
type Verdict struct {
	Workload string `json:"workload"`
	// Held reports whether Choice held the limit. If it is false, no
	// algorithm did, and Choice is the one with the lowest Overshoot
	// (ties broken by cost).
	Held   bool   `json:"held"`
	Choice Judged `json:"choice"`
	// Cheaper is the algorithm of least cost of all, when that is not
	// Choice: one that exceeded the limit. nil when Choice is the
	// cheapest.
	Cheaper *Judged `json:"cheaper,omitempty"`
	// BytesStore and CommandsStore name the stores whose memory and
	// command figures cost is ranked by; "" when no store measured them.
	BytesStore    string `json:"bytes_store,omitempty"`
	CommandsStore string `json:"commands_store,omitempty"`
	// Text is the verdict in a sentence, as ratewise compare prints it
	// under the workload's table, and CheaperText a second sentence about
	// Cheaper, "" when Cheaper is nil.
	Text        string `json:"text"`
	CheaperText string `json:"cheaper_text,omitempty"`
	// Alignment, when not nil, says that the workload's timing against its
	// windows' boundaries flatters some of its algorithms: moved later,
	// the same requests make them admit more. AlignmentText says it in a
	// sentence, as ratewise compare prints it under the verdict.
	Alignment     *Alignment `json:"alignment,omitempty"`
	AlignmentText string     `json:"alignment_text,omitempty"`
}

// Judged is one algorithm's figures on a workload as a Verdict ranks them.
type Judged struct {
	Algorithm string  `json:"algorithm"`
	Params    string  `json:"params"`
	Overshoot float64 `json:"overshoot"`
	// BytesPerKey is from the Verdict's BytesStore and CommandsPerDecision
	// from its CommandsStore; nil when not measured.
	BytesPerKey         *float64 `json:"bytes_per_key"`
	CommandsPerDecision *float64 `json:"commands_per_decision"`
	FalseDenials        int64    `json:"false_denials"`
	// label names the algorithm in Text: its name, and its parameters
	// when the workload has rows of that name with others.
	label string
	// level is the rank of BytesPerKey among the workload's figures,
	// those within the tolerance of a level's least being one level.
	level int
}

// realism ranks targets by how much like production their figures are.
func realism(target string) int {
	switch target {
	case "redis", "cluster", "postgres":
		return 3
	case "miniredis":
		return 2
	case "memory":
		return 1
	}
	return 0
}

// verdicts judges every workload of rep from its rows.
func verdicts(rep *Report) []Verdict {
	var out []Verdict
	for _, wl := range rep.Workloads {
		var rows []Row
		for _, r := range rep.Rows {
			if r.Workload == wl.Name {
				rows = append(rows, r)
			}
		}
		if len(rows) > 0 {
			out = append(out, judge(wl.Name, rows, rep.Targets))
		}
	}
	return out
}

// judge returns the verdict on one workload's rows, run on targets.
func judge(workload string, rows []Row, targets []string) Verdict {
	v := Verdict{Workload: workload}
	// The stores whose figures count: the most production-like one that
	// measured each figure on this workload, the first of equals.
	measured := func(target string, fig func(StoreFigures) *float64) bool {
		for _, r := range rows {
			if s, ok := figuresOn(r, target); ok && fig(s) != nil {
				return true
			}
		}
		return false
	}
	bytesOf := func(s StoreFigures) *float64 { return s.BytesPerKey }
	cmdsOf := func(s StoreFigures) *float64 { return s.CommandsPerDecision }
	for _, t := range targets {
		if measured(t, bytesOf) && (v.BytesStore == "" || realism(t) > realism(v.BytesStore)) {
			v.BytesStore = t
		}
		if measured(t, cmdsOf) && (v.CommandsStore == "" || realism(t) > realism(v.CommandsStore)) {
			v.CommandsStore = t
		}
	}

	names := map[string]int{}
	for _, r := range rows {
		names[r.Algorithm]++
	}
	judged := make([]Judged, len(rows))
	for i, r := range rows {
		j := Judged{
			Algorithm:    r.Algorithm,
			Params:       r.Params,
			Overshoot:    r.Overshoot,
			FalseDenials: r.FalseDenials,
			label:        r.Algorithm,
		}
		if names[r.Algorithm] > 1 {
			j.label += " " + r.Params
		}
		if s, ok := figuresOn(r, v.BytesStore); ok {
			j.BytesPerKey = s.BytesPerKey
		}
		if s, ok := figuresOn(r, v.CommandsStore); ok {
			j.CommandsPerDecision = s.CommandsPerDecision
		}
		judged[i] = j
	}

	setLevels(judged)

	cheapest, choice := -1, -1
	for i, j := range judged {
		if cheapest < 0 || before(j, judged[cheapest]) {
			cheapest = i
		}
		if j.Overshoot <= 1 && (choice < 0 || before(j, judged[choice])) {
			choice = i
		}
	}
	v.Held = choice >= 0
	if !v.Held {
		for i, j := range judged {
			c := judged[max(choice, 0)]
			if choice < 0 || j.Overshoot < c.Overshoot || j.Overshoot == c.Overshoot && before(j, c) {
				choice = i
			}
		}
	}
	v.Choice = judged[choice]
	if costsLess(judged[cheapest], v.Choice) {
		c := judged[cheapest]
		v.Cheaper = &c
	}
	v.text()
	return v
}

// figuresOn returns r's figures on target.
func figuresOn(r Row, target string) (StoreFigures, bool) {
	for _, s := range r.Stores {
		if s.Target == target {
			return s, true
		}
	}
	return StoreFigures{}, false
}

// sameMemory is how close two figures of memory per key must be to count
// as one cost: within 2% of the smaller, and at least 1 byte.
func sameMemory(least, b float64) bool { return b-least <= max(1, 0.02*least) }

// setLevels ranks the measured memory figures of js into levels: the least
// figure and those within sameMemory of it are level 0, the least above
// them and those within sameMemory of it level 1, and so on. A figure not
// measured gets the level after the last, ranking after every measured one.
func setLevels(js []Judged) {
	var figures []float64
	for _, j := range js {
		if j.BytesPerKey != nil {
			figures = append(figures, *j.BytesPerKey)
		}
	}
	slices.Sort(figures)
	var floors []float64 // each level's least figure
	for _, f := range figures {
		if len(floors) == 0 || !sameMemory(floors[len(floors)-1], f) {
			floors = append(floors, f)
		}
	}
	for i := range js {
		js[i].level = len(floors)
		if b := js[i].BytesPerKey; b != nil {
			// The last level whose floor is at most b.
			js[i].level = sort.SearchFloat64s(floors, math.Nextafter(*b, math.Inf(1))) - 1
		}
	}
}

// costsLess reports whether a costs less than b in memory or commands.
func costsLess(a, b Judged) bool {
	if a.level != b.level {
		return a.level < b.level
	}
	return compareRounded(a.CommandsPerDecision, b.CommandsPerDecision, 100) < 0
}

// before reports whether a ranks before b: it costs less, or as much with
// fewer false denials, or as much and as many with a name (then
// parameters) that sorts first. See Verdict.
func before(a, b Judged) bool {
	if costsLess(a, b) || costsLess(b, a) {
		return costsLess(a, b)
	}
	if a.FalseDenials != b.FalseDenials {
		return a.FalseDenials < b.FalseDenials
	}
	if a.Algorithm != b.Algorithm {
		return a.Algorithm < b.Algorithm
	}
	return a.Params < b.Params
}

// compareRounded compares a and b rounded to 1/scale, nil last.
func compareRounded(a, b *float64, scale float64) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	x, y := math.Round(*a*scale), math.Round(*b*scale)
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// costText describes j's cost, such as "63 B/key on memory, 2.00 cmds on
// redis" (store commands per decision, as tables head the column), naming
// the stores if stores is set; "" when nothing was measured.
func (v *Verdict) costText(j Judged, stores bool) string {
	var parts []string
	if j.BytesPerKey != nil {
		parts = append(parts, fmt.Sprintf("%.0f B/key", *j.BytesPerKey))
		if stores {
			parts[len(parts)-1] += " on " + v.BytesStore
		}
	}
	if j.CommandsPerDecision != nil {
		parts = append(parts, fmt.Sprintf("%.2f cmds", *j.CommandsPerDecision))
		if stores {
			parts[len(parts)-1] += " on " + v.CommandsStore
		}
	}
	return strings.Join(parts, ", ")
}

// text sets Text and CheaperText.
func (v *Verdict) text() {
	c := v.Choice
	if v.Held {
		v.Text = fmt.Sprintf("%s held the limit (max %.2f×) at the least cost", c.label, c.Overshoot)
	} else {
		v.Text = fmt.Sprintf("No algorithm held the limit; %s came closest, at %.2f×", c.label, c.Overshoot)
	}
	if cost := v.costText(c, true); cost != "" {
		v.Text += " (" + cost + ")"
	}
	v.Text += "."
	if ch := v.Cheaper; ch != nil {
		what := "is cheaper"
		if !v.Held {
			what = "is the cheapest"
		}
		v.CheaperText = ch.label + " " + what
		if cost := v.costText(*ch, false); cost != "" {
			v.CheaperText += " (" + cost + ")"
		}
		v.CheaperText += fmt.Sprintf(" but reached %.2f× the limit.", ch.Overshoot)
	}
}
