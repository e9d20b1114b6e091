package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay"
)

// writeTables renders rep as a table per workload, then the timed phase's
// table: aligned for a terminal, or as Markdown.
func writeTables(w io.Writer, rep *replay.Report, markdown bool) error {
	for _, wl := range rep.Workloads {
		summary := fmt.Sprintf(
			"limit %d per %s; %s requests from %s active key(s) in %s; %s",
			wl.Limit,
			Duration(wl.Window),
			Int(int64(wl.Requests)),
			Int(int64(wl.ActiveKeys)),
			Duration(wl.Duration),
			wl.Description,
		)
		var rows []replay.Row
		for _, r := range rep.Rows {
			if r.Workload == wl.Name {
				rows = append(rows, r)
			}
		}
		params := Params(wl, rows)
		if markdown {
			fmt.Fprintf(w, "#### %s\n\n%s.\n\n", wl.Name, strings.ToUpper(summary[:1])+summary[1:])
			if params != "" {
				fmt.Fprintf(w, "Parameters: %s.\n\n", params)
			}
		} else {
			fmt.Fprintf(w, "%s: %s\n", wl.Name, summary)
			if params != "" {
				fmt.Fprintf(w, "parameters: %s\n", params)
			}
		}
		t := &Table{
			Left: 1,
			Header: []string{
				"algorithm",
				"admitted",
				"denied",
				"max in " + Duration(wl.Window),
				"× limit",
				"false admits",
				"false denials",
			},
		}
		cmds := countsCommands(rows)
		for _, name := range rep.Targets {
			t.Header = append(t.Header, name+" B/key")
			if cmds[name] {
				t.Header = append(t.Header, name+" cmds")
			}
		}
		names := map[string]int{}
		for _, r := range rows {
			names[r.Algorithm]++
		}
		for _, r := range rows {
			label := r.Algorithm
			if names[r.Algorithm] > 1 {
				// Candidates of one algorithm differ by their parameters.
				label += " " + r.Params
			}
			cells := []string{label, Int(r.Admitted), Int(r.Denied), Int(r.MaxInWindow),
				Fixed2(r.Overshoot), Int(r.FalseAdmits), Int(r.FalseDenials)}
			for _, s := range r.Stores {
				cells = append(cells, optional(s.BytesPerKey, "%.0f"))
				if cmds[s.Target] {
					cells = append(cells, optional(s.CommandsPerDecision, "%.2f"))
				}
			}
			t.Add(cells...)
		}
		t.Write(w, markdown)
		for _, v := range rep.Verdicts {
			if v.Workload != wl.Name {
				continue
			}
			if markdown {
				fmt.Fprintf(w, "**Verdict:** %s\n\n", strings.TrimSpace(v.Text+" "+v.CheaperText))
				if v.AlignmentText != "" {
					fmt.Fprintf(w, "**Timing:** %s\n\n", v.AlignmentText)
				}
				continue
			}
			writeWrapped(w, "verdict: ", v.Text)
			if v.CheaperText != "" {
				writeWrapped(w, "         ", v.CheaperText)
			}
			if v.AlignmentText != "" {
				writeWrapped(w, "timing:  ", v.AlignmentText)
			}
		}
		if markdown {
			for _, l := range Legend(wl, rows, rep.Targets) {
				fmt.Fprintf(w, "- %s\n", l)
			}
		}
		fmt.Fprintln(w)
	}
	if !markdown && len(rep.Workloads) > 0 {
		// On a terminal the legend is the same under every table: once,
		// after the last, for a window named W.
		for i, l := range Legend(replay.WorkloadInfo{}, rep.Rows, rep.Targets) {
			prefix := "legend:  "
			if i > 0 {
				prefix = "         "
			}
			writeWrapped(w, prefix, l)
		}
		fmt.Fprintln(w)
	}
	if len(rep.Timings) > 0 {
		first := rep.Timings[0]
		title := fmt.Sprintf("Timed phase: each algorithm on each store on the real clock, %s, limit %d per %s",
			Keys(int64(first.Keys)), rep.TimedLimit, Duration(rep.TimedWindow))
		if markdown {
			fmt.Fprintf(w, "#### Timed phase\n\n%s.\n\n", title)
		} else {
			fmt.Fprintln(w, title)
		}
		t := &Table{
			Left:   2,
			Header: []string{"store", "algorithm", "params", "goroutines", "decisions", "decisions/s", "p50", "p99"},
		}
		for _, tm := range rep.Timings {
			t.Add(
				tm.Target,
				tm.Algorithm,
				tm.Params,
				strconv.Itoa(tm.Goroutines),
				Int(tm.Decisions),
				Int(int64(tm.PerSecond)),
				Latency(tm.P50),
				Latency(tm.P99),
			)
		}
		t.Write(w, markdown)
		legend := "goroutines decide at once, each on its share of the keys, on the real clock; decisions/s is " +
			"their total; p50 and p99 are each decision's latency as the caller saw it, " +
			"on this machine, with the store (and Redis or PostgreSQL, if any) sharing its cores. Speed is for " +
			"comparing algorithms side by side in one run, not a capacity figure."
		if markdown {
			fmt.Fprintf(w, "%s\n\n", legend)
		} else {
			writeWrapped(w, "legend:  ", legend)
			fmt.Fprintln(w)
		}
	}
	if line := bottomLine(rep.Verdicts); line != "" && !markdown {
		writeWrapped(w, "bottom line: ", line)
	}
	return nil
}

// countsCommands reports, by target, whether it counted store commands on
// any of rows: Redis and miniredis do; the memory store and PostgreSQL
// have none to count, and get no column for them.
func countsCommands(rows []replay.Row) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		for _, s := range r.Stores {
			out[s.Target] = out[s.Target] || s.CommandsPerDecision != nil
		}
	}
	return out
}

// Params describes the parameters of a workload's rows beyond what they
// share, such as "limit 100 per 1m; sliding_window: 10 sub-windows of 6s;
// token_bucket and gcra: burst 100": the limit every algorithm enforces,
// then each setting with the algorithms that have it. A row whose limit or
// window differs from the workload's, a candidate, has its own. "" when rows
// carry no settings (a report read back from JSON).
func Params(wl replay.WorkloadInfo, rows []replay.Row) string {
	var order []string
	byWhat := map[string][]string{}
	shared := false
	for _, r := range rows {
		p := r.Settings
		if p == (algorithms.Params{}) {
			continue
		}
		var what []string
		switch {
		case p.Period != "":
			// A calendar window counts per calendar period, not per window.
			what = append(what, fmt.Sprintf("limit %d per calendar %s (UTC)", p.Limit, p.Period))
		case p.Limit != wl.Limit || p.Window != wl.Window:
			what = append(what, fmt.Sprintf("limit %d per %s", p.Limit, Duration(p.Window)))
		default:
			shared = true
		}
		if p.SubWindows > 0 {
			what = append(
				what,
				fmt.Sprintf("%d sub-windows of %s", p.SubWindows, Duration(p.Window/time.Duration(p.SubWindows))),
			)
		}
		if p.Burst > 0 {
			what = append(what, fmt.Sprintf("burst %d", p.Burst))
		}
		if len(what) == 0 {
			continue
		}
		key := strings.Join(what, ", ")
		if _, ok := byWhat[key]; !ok {
			order = append(order, key)
		}
		if !slices.Contains(byWhat[key], r.Algorithm) {
			byWhat[key] = append(byWhat[key], r.Algorithm)
		}
	}
	var parts []string
	if shared {
		parts = append(parts, fmt.Sprintf("limit %d per %s", wl.Limit, Duration(wl.Window)))
	}
	for _, what := range order {
		parts = append(parts, AndList(byWhat[what])+": "+what)
	}
	return strings.Join(parts, "; ")
}

// AndList joins names as "a", "a and b" or "a, b and c".
func AndList(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Legend explains each column of a workload's table in a sentence, for the
// targets the table has columns for; rows are the workload's, to name the
// algorithms whose memory is measured by replaying the workload. Wrapped
// to 120 columns it takes 6 lines for two targets.
func Legend(wl replay.WorkloadInfo, rows []replay.Row, targets []string) []string {
	win, span := Duration(wl.Window), Duration(wl.Window)
	if wl.Window == 0 { // every workload's legend at once
		win, span = "W", "W, the workload's window"
	}
	lines := []string{
		fmt.Sprintf(
			"admitted, denied: decisions of each kind. max in %s: the most admitted for one key in any span of %s.",
			win,
			span,
		),
		fmt.Sprintf("× limit: max in %s over the limit; an exact limiter never exceeds 1.00. "+
			"false admits, false denials: against an exact sliding log on the same trace.", win),
	}
	var logs []string
	for _, r := range rows {
		if k, err := algorithms.Lookup(r.Algorithm); err == nil && algo.FamilyOf(k) == algo.FamilyLog &&
			!slices.Contains(logs, r.Algorithm) {
			logs = append(logs, r.Algorithm)
		}
	}
	var stores []string
	cmds := false
	for _, t := range targets {
		switch t {
		case "memory":
			line := fmt.Sprintf(
				"memory B/key: Go heap growth per key over %s fresh keys after one decision",
				Int(replay.FixedStateKeys),
			)
			if len(logs) > 0 {
				line += fmt.Sprintf(
					"; for %s (state grows with traffic), over the workload replayed on copies of its keys",
					AndList(logs),
				)
			}
			lines = append(lines, line+".")
		case "redis", "cluster":
			stores = append(
				stores,
				fmt.Sprintf(
					"%s B/key: MEMORY USAGE over ≤%s busiest keys, of the state as the workload left it (a state kept as "+
						"text grows by a few bytes with its numbers).",
					t,
					Int(replay.MaxSampledKeys),
				),
			)
			cmds = true
		case "miniredis":
			stores = append(stores, "miniredis B/key: – (cannot measure Redis memory).")
			cmds = true
		case "postgres":
			stores = append(
				stores,
				"postgres B/key: bytes on disk per row (pg_total_relation_size: the table, its index and TOAST) of the "+
					"run's rows as the workload left them, "+
					"copied into a temporary table laid out as ratewise.state, fill factor included, enough times to fill "+
					"thousands of rows.",
			)
		default:
			stores = append(stores, t+" B/key: – (cannot measure memory).")
			cmds = true
		}
	}
	if cmds {
		stores = append(stores, "cmds: Redis commands per decision besides the EVALSHA.")
	}
	if len(stores) > 0 {
		lines = append(lines, strings.Join(stores, " "))
	}
	return lines
}

// bottomLine sums the verdicts up: which algorithm held the limit at the
// least cost on how many workloads, and where to go for a user's own
// traffic. It is "" without verdicts.
func bottomLine(verdicts []replay.Verdict) string {
	if len(verdicts) == 0 {
		return ""
	}
	var order []string
	won := map[string][]string{}
	var none []string
	for _, v := range verdicts {
		if !v.Held {
			none = append(none, v.Workload)
			continue
		}
		a := v.Choice.Algorithm
		if _, ok := won[a]; !ok {
			order = append(order, a)
		}
		won[a] = append(won[a], v.Workload)
	}
	slices.SortStableFunc(order, func(a, b string) int { return len(won[b]) - len(won[a]) })
	workloads := "workloads"
	if len(verdicts) == 1 {
		workloads = "workload"
	}
	var parts []string
	for i, a := range order {
		of := ""
		if i == 0 {
			of = fmt.Sprintf(" of %d %s", len(verdicts), workloads)
		}
		parts = append(parts, fmt.Sprintf("%s on %d%s (%s)", a, len(won[a]), of, strings.Join(won[a], ", ")))
	}
	var b strings.Builder
	if len(parts) > 0 {
		fmt.Fprintf(&b, "the algorithm that held the limit at the least cost was %s.", strings.Join(parts, "; "))
	}
	if len(none) > 0 {
		fmt.Fprintf(&b, " None held it on %s.", strings.Join(none, ", "))
	}
	var flattered []string
	for _, v := range verdicts {
		if v.Alignment != nil {
			flattered = append(flattered, v.Workload)
		}
	}
	if len(flattered) > 0 {
		fmt.Fprintf(&b, " The timing of the requests flatters counting per window on %s: see its timing line.",
			strings.Join(flattered, ", "))
	}
	b.WriteString(
		" No one algorithm fits every workload: for your own traffic, run ratewise recommend --qps N --window W " +
			"--precision exact (or approx).",
	)
	return strings.TrimSpace(b.String())
}

func optional(v *float64, format string) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}
