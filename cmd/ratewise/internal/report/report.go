// Package report renders what ratewise compare measured: aligned tables for
// a terminal, Markdown, CSV, JSON and SVG charts.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/svgplot"
	"github.com/ratewise/ratewise/replay"
)

// Formats lists the formats Write accepts.
var Formats = []string{"table", "markdown", "csv", "json"}

// Write renders rep to w in format, one of Formats.
func Write(w io.Writer, rep *replay.Report, format string) error {
	switch format {
	case "table":
		return writeTables(w, rep, false)
	case "markdown":
		return writeTables(w, rep, true)
	case "csv":
		return writeCSV(w, rep)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
}

// Duration prints d without zero units: "1m", "1h", "1.5s".
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Int prints n with thousands separators.
func Int(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Keys prints a number of keys, "1 key" or "100,000 keys".
func Keys(n int64) string {
	if n == 1 {
		return "1 key"
	}
	return Int(n) + " keys"
}

// Table is rows of cells, rendered aligned or as Markdown.
type Table struct {
	Header []string
	Rows   [][]string
	Left   int // how many leading columns are text, aligned left
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write renders the table aligned for a terminal, or as Markdown.
func (t *Table) Write(w io.Writer, markdown bool) {
	if markdown {
		fmt.Fprintf(w, "| %s |\n", strings.Join(t.Header, " | "))
		seps := make([]string, len(t.Header))
		for i := range seps {
			seps[i] = "---"
			if i > 0 {
				seps[i] = "---:"
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
		for _, r := range t.Rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		fmt.Fprintln(w)
		return
	}
	// Text columns read left-aligned, numbers right-aligned.
	widths := make([]int, len(t.Header))
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < t.Left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	fmt.Fprintln(w)
}

func writeTables(w io.Writer, rep *replay.Report, markdown bool) error {
	for _, wl := range rep.Workloads {
		summary := fmt.Sprintf("limit %d per %s; %s requests from %s active key(s) in %s; %s",
			wl.Limit, Duration(wl.Window), Int(int64(wl.Requests)), Int(int64(wl.ActiveKeys)), Duration(wl.Duration), wl.Description)
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
		t := &Table{Left: 1, Header: []string{"algorithm", "admitted", "denied", "max in " + Duration(wl.Window), "× limit", "false admits", "false denials"}}
		for _, name := range rep.Targets {
			t.Header = append(t.Header, name+" B/key")
			if name != "memory" {
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
				if s.Target != "memory" {
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
				continue
			}
			writeWrapped(w, "verdict: ", v.Text)
			if v.CheaperText != "" {
				writeWrapped(w, "         ", v.CheaperText)
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
		t := &Table{Left: 2, Header: []string{"store", "algorithm", "params", "goroutines", "decisions", "decisions/s", "p50", "p99"}}
		for _, tm := range rep.Timings {
			t.Add(tm.Target, tm.Algorithm, tm.Params, strconv.Itoa(tm.Goroutines), Int(tm.Decisions), Int(int64(tm.PerSecond)), Latency(tm.P50), Latency(tm.P99))
		}
		t.Write(w, markdown)
		legend := "goroutines decide at once, each on its share of the keys, on the real clock; decisions/s is their total; p50 and p99 are each decision's latency as the caller saw it, " +
			"on this machine, with the store (and Redis, if any) sharing its cores. Speed is for comparing algorithms side by side in one run, not a capacity figure."
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

// lineWidth is the width the notes under a table are wrapped to, so that
// they read on a terminal of 120 columns, as wide as a table with one Redis.
const lineWidth = 120

// writeWrapped writes text after prefix, wrapped at word boundaries to
// lineWidth, continuation lines indented as far as prefix.
func writeWrapped(w io.Writer, prefix, text string) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line := prefix
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > lineWidth {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
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
		if p.Limit != wl.Limit || p.Window != wl.Window {
			what = append(what, fmt.Sprintf("limit %d per %s", p.Limit, Duration(p.Window)))
		} else {
			shared = true
		}
		if p.SubWindows > 0 {
			what = append(what, fmt.Sprintf("%d sub-windows of %s", p.SubWindows, Duration(p.Window/time.Duration(p.SubWindows))))
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
		parts = append(parts, andList(byWhat[what])+": "+what)
	}
	return strings.Join(parts, "; ")
}

// andList joins names as "a", "a and b" or "a, b and c".
func andList(names []string) string {
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
		fmt.Sprintf("admitted, denied: decisions of each kind. max in %s: the most admitted for one key in any span of %s.", win, span),
		fmt.Sprintf("× limit: max in %s over the limit; an exact limiter never exceeds 1.00. "+
			"false admits, false denials: against an exact sliding log on the same trace.", win),
	}
	var logs []string
	for _, r := range rows {
		if k, err := algorithms.Lookup(r.Algorithm); err == nil && algo.FamilyOf(k) == algo.FamilyLog && !slices.Contains(logs, r.Algorithm) {
			logs = append(logs, r.Algorithm)
		}
	}
	var stores []string
	cmds := false
	for _, t := range targets {
		switch t {
		case "memory":
			line := fmt.Sprintf("memory B/key: Go heap growth per key over %s fresh keys after one decision", Int(replay.FixedStateKeys))
			if len(logs) > 0 {
				line += fmt.Sprintf("; for %s (state grows with traffic), over the workload replayed on copies of its keys", andList(logs))
			}
			lines = append(lines, line+".")
		case "redis", "cluster":
			stores = append(stores, fmt.Sprintf("%s B/key: MEMORY USAGE over ≤%s busiest keys, of the state as the workload left it (a state kept as text grows by a few bytes with its numbers).", t, Int(replay.MaxSampledKeys)))
			cmds = true
		case "miniredis":
			stores = append(stores, "miniredis B/key: – (cannot measure Redis memory).")
			cmds = true
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
	b.WriteString(" No one algorithm fits every workload: for your own traffic, run ratewise recommend --qps N --window W --precision exact (or approx).")
	return strings.TrimSpace(b.String())
}

// Fixed2 prints v with two decimals, as ratios are shown.
func Fixed2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// Latency prints d to three significant figures.
func Latency(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%dns", d)
}

func optional(v *float64, format string) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf(format, *v)
}

// csvHeader is the CSV's columns. Each record is one of two sections,
// named in its first column: "replay", one algorithm on one workload on one
// store, and "timed", one algorithm timed on one store; a column that does
// not apply to a section is empty.
var csvHeader = []string{"section", "workload", "limit", "window_seconds", "algorithm", "params", "requests", "admitted", "denied",
	"max_in_window", "overshoot", "over_limit_admits", "false_admits", "false_denials",
	"store", "bytes_per_key", "keys_measured", "round_trips_per_decision", "commands_per_decision",
	"goroutines", "keys", "decisions", "decisions_per_second", "p50_us", "p99_us"}

func writeCSV(w io.Writer, rep *replay.Report) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	info := map[string]replay.WorkloadInfo{}
	for _, wl := range rep.Workloads {
		info[wl.Name] = wl
	}
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	seconds := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	for _, r := range rep.Rows {
		wl := info[r.Workload]
		for _, s := range r.Stores {
			keys := ""
			if s.KeysHeld > 0 {
				keys = strconv.Itoa(s.KeysHeld)
			}
			cw.Write([]string{"replay", r.Workload, i64(wl.Limit), seconds(wl.Window),
				r.Algorithm, r.Params, i64(r.Requests), i64(r.Admitted), i64(r.Denied),
				i64(r.MaxInWindow), strconv.FormatFloat(r.Overshoot, 'f', 4, 64), i64(r.OverLimit),
				i64(r.FalseAdmits), i64(r.FalseDenials),
				s.Target, num(s.BytesPerKey), keys, strconv.FormatFloat(s.RoundTripsPerDecision, 'f', 4, 64), num(s.CommandsPerDecision),
				"", "", "", "", "", ""})
		}
	}
	for _, tm := range rep.Timings {
		cw.Write([]string{"timed", "", i64(rep.TimedLimit), seconds(rep.TimedWindow),
			tm.Algorithm, "", "", "", "",
			"", "", "", "", "",
			tm.Target, "", "", "", "",
			strconv.Itoa(tm.Goroutines), strconv.Itoa(tm.Keys), i64(tm.Decisions), strconv.FormatFloat(tm.PerSecond, 'f', 0, 64),
			strconv.FormatFloat(float64(tm.P50)/1e3, 'f', 3, 64), strconv.FormatFloat(float64(tm.P99)/1e3, 'f', 3, 64)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteCharts writes one SVG per workload into dir, named after the
// workload, and returns the file names.
func WriteCharts(dir string, rep *replay.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, wl := range rep.Workloads {
		lines := rep.Charts[wl.Name]
		if len(lines) == 0 {
			continue
		}
		c := Chart(wl, lines)
		name := wl.Name + ".svg"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c.SVG()), 0o644); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

// Chart plots a workload's lines: the offered load and each algorithm's
// admissions in the trailing window, against the limit.
func Chart(wl replay.WorkloadInfo, lines []replay.Line) svgplot.Chart {
	c := svgplot.Chart{
		Title:  fmt.Sprintf("%s: admitted in the trailing %s, busiest key (limit %d)", wl.Name, Duration(wl.Window), wl.Limit),
		XLabel: "simulated time since the start",
		YLabel: "admitted in the trailing " + Duration(wl.Window),
		XTick:  func(v float64) string { return Duration(time.Duration(v).Round(time.Second)) },
	}
	end := float64(wl.Duration)
	step := time.Second
	for _, d := range []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 24 * time.Hour} {
		if wl.Duration/step <= 8 {
			break
		}
		step = d
	}
	for t := time.Duration(0); t <= wl.Duration; t += step {
		c.XTicks = append(c.XTicks, float64(t))
	}
	c.Series = append(c.Series, svgplot.Series{Name: "limit", Colour: "#000000", Dashed: true,
		Points: [][2]float64{{0, float64(wl.Limit)}, {end, float64(wl.Limit)}}})
	// Algorithms that admit alike draw on top of each other; each line is
	// thinner than the one before, so that every one stays visible.
	colour := 0
	for i, l := range lines {
		s := svgplot.Series{Name: l.Name, Width: max(1, 6-float64(i))}
		if l.Name == "offered" {
			s.Colour, s.Dashed, s.Width = "#bbbbbb", true, 2
		} else {
			s.Colour = svgplot.Colours[colour%len(svgplot.Colours)]
			colour++
		}
		for _, p := range l.Points {
			s.Points = append(s.Points, [2]float64{float64(p.At), float64(p.Value)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}
