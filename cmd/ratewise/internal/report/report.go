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
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
		if markdown {
			fmt.Fprintf(w, "#### %s\n\n%s.\n\n", wl.Name, strings.ToUpper(summary[:1])+summary[1:])
		} else {
			fmt.Fprintf(w, "%s: %s\n", wl.Name, summary)
		}
		t := &Table{Left: 1, Header: []string{"algorithm", "admitted", "denied", "max in " + Duration(wl.Window), "× limit", "false admits", "false denials"}}
		for _, name := range rep.Targets {
			t.Header = append(t.Header, name+" B/key")
			if name != "memory" {
				t.Header = append(t.Header, name+" cmds")
			}
		}
		for _, r := range rep.Rows {
			if r.Workload != wl.Name {
				continue
			}
			cells := []string{r.Algorithm, Int(r.Admitted), Int(r.Denied), Int(r.MaxInWindow),
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
	}
	if len(rep.Timings) > 0 {
		first := rep.Timings[0]
		title := fmt.Sprintf("Timed phase: each algorithm on each store on the real clock, %s keys, limit %d per %s",
			Int(int64(first.Keys)), rep.TimedLimit, Duration(rep.TimedWindow))
		if markdown {
			fmt.Fprintf(w, "#### Timed phase\n\n%s.\n\n", title)
		} else {
			fmt.Fprintln(w, title)
		}
		t := &Table{Left: 2, Header: []string{"store", "algorithm", "goroutines", "decisions", "decisions/s", "p50", "p99"}}
		for _, tm := range rep.Timings {
			t.Add(tm.Target, tm.Algorithm, strconv.Itoa(tm.Goroutines), Int(tm.Decisions), Int(int64(tm.PerSecond)), Latency(tm.P50), Latency(tm.P99))
		}
		t.Write(w, markdown)
	}
	return nil
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

func writeCSV(w io.Writer, rep *replay.Report) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"workload", "limit", "window_seconds", "algorithm", "params", "requests", "admitted", "denied",
		"max_in_window", "overshoot", "over_limit_admits", "false_admits", "false_denials",
		"store", "bytes_per_key", "round_trips_per_decision", "commands_per_decision",
		"decisions_per_second", "p50_us", "p99_us"})
	info := map[string]replay.WorkloadInfo{}
	for _, wl := range rep.Workloads {
		info[wl.Name] = wl
	}
	timing := map[[2]string]replay.Timing{}
	for _, tm := range rep.Timings {
		timing[[2]string{tm.Target, tm.Algorithm}] = tm
	}
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	for _, r := range rep.Rows {
		wl := info[r.Workload]
		for _, s := range r.Stores {
			rec := []string{r.Workload, strconv.FormatInt(wl.Limit, 10), strconv.FormatFloat(wl.Window.Seconds(), 'f', -1, 64),
				r.Algorithm, r.Params, strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Admitted, 10), strconv.FormatInt(r.Denied, 10),
				strconv.FormatInt(r.MaxInWindow, 10), strconv.FormatFloat(r.Overshoot, 'f', 4, 64), strconv.FormatInt(r.OverLimit, 10),
				strconv.FormatInt(r.FalseAdmits, 10), strconv.FormatInt(r.FalseDenials, 10),
				s.Target, num(s.BytesPerKey), strconv.FormatFloat(s.RoundTripsPerDecision, 'f', 4, 64), num(s.CommandsPerDecision)}
			if tm, ok := timing[[2]string{s.Target, r.Algorithm}]; ok {
				rec = append(rec, strconv.FormatFloat(tm.PerSecond, 'f', 0, 64),
					strconv.FormatFloat(float64(tm.P50)/1e3, 'f', 3, 64), strconv.FormatFloat(float64(tm.P99)/1e3, 'f', 3, 64))
			} else {
				rec = append(rec, "", "", "")
			}
			cw.Write(rec)
		}
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
