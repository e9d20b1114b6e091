package report

import (
	"bytes"
	"encoding/csv"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/replay"
)

func TestFormatting(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Int(in); got != want {
			t.Errorf("Int(%d): got %q, want %q", in, got, want)
		}
	}
	for in, want := range map[time.Duration]string{
		time.Minute: "1m", time.Hour: "1h", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s", 24 * time.Hour: "24h",
	} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v): got %q, want %q", in, got, want)
		}
	}
	for in, want := range map[int64]string{1: "1 key", 2: "2 keys", 100000: "100,000 keys"} {
		if got := Keys(in); got != want {
			t.Errorf("Keys(%d): got %q, want %q", in, got, want)
		}
	}
}

func TestTableAlignsTextLeftAndNumbersRight(t *testing.T) {
	tb := &Table{Left: 1, Header: []string{"name", "count"}}
	tb.Add("a", "1,000")
	tb.Add("longer", "7")
	var b bytes.Buffer
	tb.Write(&b, false)
	want := "name    count\na       1,000\nlonger      7\n\n"
	if got := b.String(); got != want {
		t.Fatalf("aligned:\n%q\nwant\n%q", got, want)
	}
	b.Reset()
	tb.Write(&b, true)
	if got := b.String(); !strings.HasPrefix(got, "| name | count |\n| --- | ---: |\n| a | 1,000 |\n") {
		t.Fatalf("markdown:\n%s", got)
	}
}

func ptr(v float64) *float64 { return &v }

// testReport is a comparison of three algorithms on one workload, on the
// memory store and miniredis, with a timed phase.
func testReport() *replay.Report {
	wl := replay.WorkloadInfo{
		Name:        "boundary",
		Description: "one key",
		Limit:       100,
		Window:      time.Minute,
		Duration:    6 * time.Minute,
		Requests:    600,
		Keys:        1,
		ActiveKeys:  1,
	}
	stores := func(bytes, cmds float64) []replay.StoreFigures {
		return []replay.StoreFigures{
			{Target: "memory", BytesPerKey: ptr(bytes), KeysHeld: replay.FixedStateKeys, RoundTripsPerDecision: 0},
			{Target: "miniredis", RoundTripsPerDecision: 1, CommandsPerDecision: ptr(cmds)},
		}
	}
	return &replay.Report{
		Workloads: []replay.WorkloadInfo{wl},
		Targets:   []string{"memory", "miniredis"},
		Rows: []replay.Row{
			{
				Workload:  "boundary",
				Algorithm: "fixed_window",
				Params:    "100/1m",
				Settings:  algorithms.Params{Limit: 100, Window: time.Minute},
				Accuracy: replay.Accuracy{
					Requests:    600,
					Admitted:    400,
					Denied:      200,
					MaxInWindow: 200,
					Overshoot:   2,
				},
				Stores: stores(63, 1.67),
			},
			{
				Workload:  "boundary",
				Algorithm: "sliding_window",
				Params:    "100/1m in 10 sub-windows",
				Settings:  algorithms.Params{Limit: 100, Window: time.Minute, SubWindows: 10},
				Accuracy: replay.Accuracy{
					Requests:    600,
					Admitted:    300,
					Denied:      300,
					MaxInWindow: 100,
					Overshoot:   1,
				},
				Stores: stores(900, 7),
			},
			{
				Workload:  "boundary",
				Algorithm: "token_bucket",
				Params:    "100/1m burst 100",
				Settings:  algorithms.Params{Limit: 100, Window: time.Minute, Burst: 100},
				Accuracy: replay.Accuracy{
					Requests:    600,
					Admitted:    300,
					Denied:      300,
					MaxInWindow: 100,
					Overshoot:   1,
				},
				Stores: stores(64, 1.8),
			},
			{
				Workload:  "boundary",
				Algorithm: "gcra",
				Params:    "100/1m burst 100",
				Settings:  algorithms.Params{Limit: 100, Window: time.Minute, Burst: 100},
				Accuracy: replay.Accuracy{
					Requests:    600,
					Admitted:    300,
					Denied:      300,
					MaxInWindow: 100,
					Overshoot:   1,
				},
				Stores: stores(63, 1.8),
			},
		},
		Verdicts: []replay.Verdict{{Workload: "boundary", Held: true, Choice: replay.Judged{Algorithm: "gcra"},
			Text:        "gcra held the limit (max 1.00×) at the least cost (63 B/key on memory, 1.80 cmds on miniredis).",
			CheaperText: "fixed_window is cheaper (63 B/key, 1.67 cmds) but reached 2.00× the limit."}},
		Timings: []replay.Timing{
			{
				Target:     "memory",
				Algorithm:  "gcra",
				Goroutines: 2,
				Keys:       10000,
				Decisions:  1000,
				PerSecond:  2000,
				P50:        time.Microsecond,
				P99:        2 * time.Microsecond,
			},
			{
				Target:     "miniredis",
				Algorithm:  "gcra",
				Goroutines: 16,
				Keys:       10000,
				Decisions:  100,
				PerSecond:  200,
				P50:        time.Millisecond,
				P99:        2 * time.Millisecond,
			},
		},
		TimedLimit: 100, TimedWindow: time.Minute,
	}
}

// Under each table: the parameters above it, then the verdict and a legend
// that explains every column, short enough for a terminal.
func TestTablesExplainThemselves(t *testing.T) {
	for _, format := range []string{"table", "markdown"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Write(&b, testReport(), format); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			table := strings.Index(out, "algorithm")
			params := strings.Index(
				out,
				"limit 100 per 1m; sliding_window: 10 sub-windows of 6s; token_bucket and gcra: burst 100",
			)
			if params < 0 || params > table {
				t.Errorf("no parameters line above the table:\n%s", out)
			}
			verdict := strings.Index(out, "gcra held the limit")
			if verdict < table || !strings.Contains(out, "fixed_window is cheaper") {
				t.Fatalf("no verdict under the table:\n%s", out)
			}
			// Every column of the table, explained after it: on a
			// terminal once, after the last table, for a window W.
			end := strings.Index(out, "Timed phase")
			maxIn := "max in 1m"
			if format == "table" {
				maxIn = "max in W"
				want := "bottom line: the algorithm that held the limit at the least cost was gcra on 1 of 1 workload (boundary)."
				last := out[strings.LastIndex(strings.TrimSpace(out), "\n\n")+2:]
				if !strings.HasPrefix(last, want) || !strings.Contains(last, "run ratewise recommend") {
					t.Errorf("the output does not end with the bottom line %q, naming recommend:\n%s", want, out)
				}
			}
			legend := out[verdict:end]
			for _, column := range []string{
				"admitted", "denied", maxIn, "× limit", "1.00", "false admits", "false denials", "exact sliding log",
				"memory B/key", "65,536 fresh keys", "sliding_window", "miniredis B/key", "cannot measure Redis memory",
				"cmds", "EVALSHA",
			} {
				if !strings.Contains(legend, column) {
					t.Errorf("the legend does not explain %q:\n%s", column, legend)
				}
			}
			if format == "table" {
				lines := strings.Split(strings.TrimSpace(legend), "\n")
				if len(lines) > 2+1+7 {
					t.Errorf("verdict and legend take %d lines, want at most 10:\n%s", len(lines), legend)
				}
				for _, l := range lines {
					if n := utf8.RuneCountInString(l); n > 120 {
						t.Errorf("line of %d columns, want at most 120: %q", n, l)
					}
				}
			}
		})
	}
}

// A workload whose timing flatters counting per window gets a timing line
// under its verdict, in both formats, and the bottom line names it.
func TestAlignmentUnderTheVerdict(t *testing.T) {
	rep := testReport()
	text := "These requests meet the 1m windows' boundaries at a timing that flatters counting per window: moved " +
		"40s later, the same requests take fixed_window to 1.50× the limit (1.00× here)."
	rep.Verdicts[0].Alignment = &replay.Alignment{Shift: 40 * time.Second}
	rep.Verdicts[0].AlignmentText = text
	for format, want := range map[string]string{
		"table":    "timing:  These requests meet the 1m windows' boundaries",
		"markdown": "**Timing:** " + text + "\n",
	} {
		var b bytes.Buffer
		if err := Write(&b, rep, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		at := strings.Index(out, want)
		if at < 0 || at < strings.Index(out, "gcra held the limit") {
			t.Errorf("%s: no %q under the verdict:\n%s", format, want, out)
		}
		if format == "table" && !strings.Contains(strings.Join(strings.Fields(out), " "),
			"The timing of the requests flatters counting per window on boundary: see its timing line.") {
			t.Errorf("the bottom line does not name the flattered workload:\n%s", out)
		}
	}
}

// A store that counts no commands, PostgreSQL, gets a column of bytes per
// key and none of commands, and its line in the legend, which says no
// commands are counted: no "cmds" or EVALSHA.
func TestPostgresColumns(t *testing.T) {
	rep := testReport()
	rep.Targets = []string{"memory", "postgres"}
	for i := range rep.Rows {
		rep.Rows[i].Stores[1] = replay.StoreFigures{
			Target:                "postgres",
			BytesPerKey:           ptr(380),
			KeysHeld:              10_000,
			RoundTripsPerDecision: 1.01,
		}
	}
	var b bytes.Buffer
	if err := Write(&b, rep, "table"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	header := regexp.MustCompile(`(?m)^algorithm .*$`).FindString(out)
	if !strings.HasSuffix(header, "memory B/key  postgres B/key") {
		t.Errorf("header %q does not end with the two stores' B/key and nothing more", header)
	}
	if !regexp.MustCompile(`(?m)^gcra( +[0-9.,]+){6} +63 +380$`).MatchString(out) {
		t.Errorf("no row of gcra ending with 63 and 380 B/key:\n%s", out)
	}
	for _, want := range []string{
		"postgres B/key: bytes on disk per row (pg_total_relation_size", "temporary table laid out as ratewise.state",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the legend does not say %q:\n%s", want, out)
		}
	}
	if legend := out[strings.Index(out, "legend:"):strings.Index(out, "Timed phase")]; strings.Contains(
		legend,
		"cmds",
	) {
		t.Errorf("the legend explains a cmds column there is not:\n%s", legend)
	}
}

// CSV keeps the replay's rows and the timed phase's apart: a section column
// says which, and cells that do not apply are empty, so no timing is
// repeated on every row.
func TestCSVSeparatesReplayAndTimedRows(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, testReport(), "csv"); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	if recs[0][0] != "section" {
		t.Fatalf("first column: got %q, want section", recs[0][0])
	}
	count := map[string]int{}
	for _, rec := range recs[1:] {
		count[rec[0]]++
		switch rec[0] {
		case "replay":
			for _, c := range []string{"decisions_per_second", "p50_us", "p99_us", "goroutines", "decisions"} {
				if rec[col[c]] != "" {
					t.Errorf("replay row %v: %s is %q, want empty", rec, c, rec[col[c]])
				}
			}
			if rec[col["workload"]] == "" || rec[col["admitted"]] == "" {
				t.Errorf("replay row %v lacks its workload or figures", rec)
			}
			if rec[col["store"]] == "memory" && rec[col["keys_measured"]] != "65536" {
				t.Errorf("replay row %v: keys_measured %q, want 65536", rec, rec[col["keys_measured"]])
			}
		case "timed":
			for _, c := range []string{"workload", "admitted", "overshoot", "bytes_per_key"} {
				if rec[col[c]] != "" {
					t.Errorf("timed row %v: %s is %q, want empty", rec, c, rec[col[c]])
				}
			}
			if rec[col["decisions_per_second"]] == "" || rec[col["p99_us"]] == "" {
				t.Errorf("timed row %v lacks its timings", rec)
			}
		default:
			t.Errorf("row %v: unknown section %q", rec, rec[0])
		}
	}
	if count["replay"] != 4*2 || count["timed"] != 2 {
		t.Errorf("rows per section: got %v, want 8 replay and 2 timed", count)
	}
}

// TestParamsCalendar: a calendar window's parameters name its period, not
// a window it does not have.
func TestParamsCalendar(t *testing.T) {
	wl := replay.WorkloadInfo{Name: "w", Limit: 1000, Window: 24 * time.Hour}
	rows := []replay.Row{
		{Workload: "w", Algorithm: "fixed_window", Settings: algorithms.Params{Limit: 1000, Window: 24 * time.Hour}},
		{Workload: "w", Algorithm: "calendar_window", Settings: algorithms.Params{Limit: 1000, Period: "day"}},
	}
	want := "limit 1000 per 24h; calendar_window: limit 1000 per calendar day (UTC)"
	if got := Params(wl, rows); got != want {
		t.Errorf("Params = %q, want %q", got, want)
	}
}
