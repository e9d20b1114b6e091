package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ratewise/ratewise/replay"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestErrorsExitTwoWithOneLine(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	badTrace := filepath.Join(t.TempDir(), "bad.log")
	os.WriteFile(badTrace, []byte("2026-06-01T10:00:00Z alice\nnot-a-time\n"), 0o644)
	// A directory cannot be made under a file.
	notADir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notADir, nil, 0o644)
	// Flags that make a compare quick, were it to run.
	quick := []string{"compare", "--workload", "boundary", "--alg", "fixed_window", "--time", "0"}

	cases := []struct {
		name string
		args []string
		// says is a phrase the error line must contain.
		says string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{
			"sub-windows that do not split the window",
			[]string{"compare", "--memory-store", "--workload", "boundary", "--subwindows", "7"},
			"--subwindows 7, workload boundary: 7 sub-windows do not split",
		},
		{
			"custom workload without a request",
			[]string{
				"compare",
				"--memory-store",
				"--workload",
				"custom",
				"--rate",
				"1/h",
				"--shape",
				"poisson",
				"--duration",
				"1m",
			},
			"sends no request",
		},
		{
			"recommend burst above the limit",
			[]string{"recommend", "--memory-store", "--qps", "600/min", "--precision", "approx", "--burst", "100000"},
			"recommend: --burst 100000 exceeds the limit of 600 per 1m",
		},
		{
			"recommend limit not whole",
			[]string{"recommend", "--memory-store", "--qps", "1.4", "--window", "1s", "--precision", "approx"},
			"a limit is a whole count",
		},
		{"unknown workload", []string{"compare", "--workload", "tsunami"}, `unknown workload "tsunami"`},
		{"unknown algorithm", []string{"compare", "--alg", "leaky_sieve"}, `invalid algorithm: unknown name "leaky_sieve"`},
		{"empty algorithm list", []string{"compare", "--workload", "boundary", "--time", "0", "--alg", ""},
			"--alg is empty: give comma-separated algorithms (" + strings.Join(replay.AlgorithmNames, ", ") + ") or all"},
		{
			"bad duration",
			[]string{"compare", "--window", "soon"},
			`--window "soon": want a duration with a unit, such as 500ms or 2s`,
		},
		{
			"duration without a unit",
			[]string{"compare", "--time", "5"},
			`--time "5": want a duration with a unit, such as 500ms or 2s`,
		},
		{
			"recommend duration without a unit",
			[]string{"recommend", "--latency", "1"},
			`--latency "1": want a duration with a unit`,
		},
		{"guide duration without a unit", []string{"guide", "--time", "5"}, `--time "5": want a duration with a unit`},
		{"negative timed phase", []string{"compare", "--time", "-1s"}, "--time must be >= 0, got -1s"},
		{"zero concurrency", []string{"compare", "--concurrency", "0"}, "--concurrency must be >= 1, got 0"},
		{
			"zero redis concurrency",
			[]string{"compare", "--redis-concurrency", "0"},
			"--redis-concurrency must be >= 1, got 0",
		},
		{
			"unwritable chart directory",
			append(quick, "--svg", filepath.Join(notADir, "charts")),
			`--svg "` + filepath.Join(notADir, "charts") + `": cannot write charts there`,
		},
		{"bad rate", []string{"compare", "--workload", "custom", "--rate", "lots"}, `rate "lots"`},
		{
			"aligned without a custom workload",
			[]string{"compare", "--workload", "boundary", "--aligned"},
			"--aligned applies to --workload custom with --shape bursts",
		},
		{
			"aligned poisson",
			[]string{"compare", "--workload", "custom", "--shape", "poisson", "--aligned"},
			`--aligned applies to --shape bursts only, got "poisson"`,
		},
		{"zero limit", []string{"compare", "--workload", "custom", "--limit", "0"}, "limit must be > 0"},
		{"missing trace", []string{"compare", "--trace", "/nonexistent/trace.log"}, "cannot read the trace"},
		{"malformed trace", []string{"compare", "--trace", badTrace}, "bad.log:2"},
		{"unreachable redis", []string{"compare", "--redis", closed}, "ratewise compare: store unavailable: " + closed},
		{
			"redis without a port",
			[]string{"compare", "--redis", "localhost"},
			`--redis "localhost": want host:port or a URL`,
		},
		{
			"malformed redis URL",
			[]string{"compare", "--redis", "redis://:hunter2@127.0.0.1:port"},
			"--redis: not a valid URL",
		},
		{
			"redis URL with a bad database",
			[]string{"compare", "--redis", "redis://127.0.0.1:6379/first"},
			`--redis redis://127.0.0.1:6379/first: invalid database number: "first"`,
		},
		{
			"malformed cluster URL",
			[]string{"compare", "--cluster", "redis://:hunter2@127.0.0.1:port"},
			"--cluster: not a valid URL",
		},
		{"unreachable cluster", []string{"compare", "--cluster", closed}, closed},
		{"unknown format", []string{"compare", "--format", "xml"}, `unknown format "xml"`},
		{
			"two redises",
			[]string{"compare", "--start-redis", "--redis", closed},
			"--redis and --start-redis: give only one of --redis, --cluster, --start-redis, --postgres, " +
				"--start-postgres, --memory-store or --miniredis",
		},
		{
			"two in-process stores",
			[]string{"compare", "--memory-store", "--miniredis"},
			"--memory-store and --miniredis: give only one of",
		},
		{"redis and postgres", []string{"compare", "--redis", closed, "--start-postgres"},
			"--redis and --start-postgres: give only one of --redis, --cluster, --start-redis, --postgres, " +
				"--start-postgres, --memory-store or --miniredis"},
		{
			"unreachable postgres",
			[]string{"compare", "--postgres", "postgres://ann:hunter2@" + closed + "/app"},
			"ratewise compare: store unavailable: postgres://ann:xxxxx@" + closed + "/app: ",
		},
		{
			"malformed postgres URL",
			[]string{"compare", "--postgres", "postgres://:hunter2@127.0.0.1:port/app"},
			"--postgres: not a valid URL",
		},
		{
			"postgres URL with a bad setting",
			[]string{"compare", "--postgres", "postgres://ann:hunter2@127.0.0.1/app?sslmode=sometimes"},
			"--postgres postgres://ann:xxxxx@127.0.0.1/app?sslmode=sometimes: sslmode is invalid",
		},
		{
			"postgres settings with a bad port",
			[]string{"compare", "--postgres", "host=127.0.0.1 port=none password=hunter2"},
			"--postgres: cannot parse",
		},
		{
			"recommend on two stores",
			[]string{"recommend", "--qps", "3", "--window", "1m", "--precision", "exact", "--memory-store", "--start-redis"},
			"--start-redis and --memory-store: give only one of --redis, --cluster, --start-redis, --postgres, " +
				"--start-postgres or --memory-store",
		},
		{"stray argument", []string{"compare", "boundary"}, `unexpected argument "boundary"`},
		{
			"recommend without precision",
			[]string{"recommend", "--qps", "10", "--window", "1m"},
			"--precision must be exact or approx",
		},
		{
			"recommend bad qps",
			[]string{"recommend", "--qps", "-3", "--window", "1m", "--precision", "exact"},
			"--qps must be > 0",
		},
		{
			"recommend per key and in total",
			[]string{"recommend", "--qps", "3", "--total-qps", "300", "--window", "1m", "--precision", "exact"},
			"--qps 3 and --total-qps 300: give one, --qps for each key's rate or --total-qps for all keys' together",
		},
		{
			"recommend a total of less than one request per key",
			[]string{"recommend", "--total-qps", "100", "--keys", "100000", "--window", "1s", "--precision", "exact"},
			"--total-qps 100 among 100,000 keys is 0.001 requests per key per 1s, less than one",
		},
		{
			"recommend bad memory",
			[]string{"recommend", "--qps", "3", "--window", "1m", "--precision", "exact", "--memory", "much"},
			`--memory "much"`,
		},
		{
			"recommend unreachable redis",
			[]string{"recommend", "--qps", "3", "--window", "1m", "--precision", "exact", "--redis", closed},
			closed,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 2 {
				t.Fatalf("exit code %d, want 2; stderr: %s", code, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			// The error is one line, and every mistake here is found
			// before anything runs: no progress lines precede it.
			if strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr has more than the error line: %q", stderr)
			}
			last := strings.TrimSuffix(stderr, "\n")
			if !strings.HasPrefix(last, "ratewise ") || !strings.Contains(last, c.says) {
				t.Errorf("error line %q does not say %q", last, c.says)
			}
			if strings.Contains(strings.TrimPrefix(last, "ratewise "), "ratewise: ") {
				t.Errorf("error line %q repeats the ratewise: prefix", last)
			}
			if strings.Contains(last, "hunter2") {
				t.Errorf("error line %q shows the password", last)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr: %s", stderr)
			}
		})
	}
}

func TestCompareCSVAndJSON(t *testing.T) {
	code, stdout, stderr := runCLI(
		t,
		"compare",
		"--workload",
		"boundary",
		"--time",
		"0",
		"--format",
		"csv",
		"--miniredis",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// Every algorithm compare shows (not the calendar window) × 2 stores.
	if got, want := len(recs)-1, 2*len(replay.AlgorithmNames); got != want {
		t.Fatalf("csv rows: got %d, want %d", got, want)
	}
	for _, r := range recs[1:] {
		if r[col["algorithm"]] == "fixed_window" && r[col["overshoot"]] != "2.0000" {
			t.Errorf("fixed window overshoot on %s: %s, want 2.0000", r[col["store"]], r[col["overshoot"]])
		}
	}
	if n := 2 * len(replay.AlgorithmNames); !strings.Contains(stderr, fmt.Sprintf("ratewise: [%d/%d]", n, n)) {
		t.Errorf("stderr (not a terminal) should carry plain progress lines, got %q", stderr)
	}

	code, stdout, stderr = runCLI(
		t,
		"compare",
		"--workload",
		"custom",
		"--shape",
		"steady",
		"--rate",
		"3/s",
		"--limit",
		"100",
		"--keys",
		"3",
		"--duration",
		"2m",
		"--alg",
		"gcra,sliding_log",
		"--time",
		"0",
		"--format",
		"json",
		"--miniredis",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Workloads []struct{ Name string }
		Results   []struct {
			Algorithm string
			Requests  int64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if len(rep.Workloads) != 1 || rep.Workloads[0].Name != "custom" || len(rep.Results) != 2 ||
		rep.Results[0].Requests != 3*3*120 {
		t.Fatalf("json report: %+v", rep)
	}
}

func TestCompareWritesCharts(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(
		t,
		"compare",
		"--workload",
		"boundary,steady-at",
		"--alg",
		"fixed_window",
		"--time",
		"0",
		"--svg",
		dir,
		"--memory-store",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"boundary.svg", "steady-at.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("<svg")) || !bytes.Contains(b, []byte("fixed_window")) {
			t.Errorf("%s is not a chart of fixed_window", name)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"compare", "-h"}, {"recommend", "-h"}} {
		if code, stdout, _ := runCLI(t, args...); code != 0 || !strings.Contains(stdout, "usage: ratewise") {
			t.Errorf("%v: exit %d, stdout %q", args, code, stdout)
		}
	}
}

// "ratewise version" says what was built; "ratewise help <command>" and
// "ratewise <command> help" print the command's usage, as -h does.
func TestVersionAndCommandHelp(t *testing.T) {
	code, stdout, stderr := runCLI(t, "version")
	if code != 0 {
		t.Fatalf("version: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"ratewise ", "revision ", runtime.Version()} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version says %q, not %q", stdout, want)
		}
	}
	for _, args := range [][]string{
		{"compare", "help"}, {"help", "compare"}, {"recommend", "help"}, {"help", "recommend"},
		{"guide", "help"}, {"help", "guide"}, {"version", "help"}, {"help", "version"},
		{"doctor", "help"}, {"help", "doctor"},
	} {
		name := args[0]
		if name == "help" {
			name = args[1]
		}
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 || !strings.HasPrefix(stdout, "usage: ratewise "+name+" [flags]") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want ratewise %s -h's usage", args, code, stdout, stderr, name)
		}
	}
	for _, name := range []string{"version", "doctor"} {
		if code, stdout, _ := runCLI(t, "help"); code != 0 || !strings.Contains(stdout, "  "+name+" ") {
			t.Errorf("help: exit %d; the usage does not list %s: %q", code, name, stdout)
		}
	}
}

// The timed phase enforces --limit per --window over --keys keys, when --keys
// is given.
func TestCompareTimedPhaseHonoursTheLimit(t *testing.T) {
	code, stdout, stderr := runCLI(
		t,
		"compare",
		"--workload",
		"steady-at",
		"--alg",
		"gcra",
		"--limit",
		"7",
		"--window",
		"2s",
		"--keys",
		"3",
		"--time",
		"50ms",
		"--format",
		"json",
		"--memory-store",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		TimedLimit  int64 `json:"timed_limit"`
		TimedWindow int64 `json:"timed_window_ns"`
		Timed       []struct {
			Store, Algorithm, Params string
			Keys                     int
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	if rep.TimedLimit != 7 || rep.TimedWindow != 2e9 {
		t.Errorf("timed phase limit: got %d per %dns, want 7 per 2s", rep.TimedLimit, rep.TimedWindow)
	}
	if len(rep.Timed) != 1 {
		t.Fatalf("timed entries: got %+v, want gcra on the memory store alone", rep.Timed)
	}
	for _, tm := range rep.Timed {
		if tm.Keys != 3 {
			t.Errorf("%s on %s timed over %d keys, want 3", tm.Algorithm, tm.Store, tm.Keys)
		}
		// What the timed algorithm itself enforced.
		if tm.Params != "7/2s burst 7" {
			t.Errorf("%s on %s timed with %q, want 7/2s burst 7", tm.Algorithm, tm.Store, tm.Params)
		}
	}
}

// A step that replays many requests reports how far it has got, not only
// when it is done.
func TestProgressInsideALongStep(t *testing.T) {
	old := withinEvery
	withinEvery = 0
	t.Cleanup(func() { withinEvery = old })
	// 200 keys at 20/s for 20 s: 80,000 requests, more than one report's
	// worth.
	code, _, stderr := runCLI(t, "compare", "--memory-store", "--workload", "custom", "--alg", "gcra",
		"--rate", "20/s", "--keys", "200", "--duration", "20s", "--time", "0", "--format", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "custom: gcra on memory: ") || !strings.Contains(stderr, "% of its requests") {
		t.Fatalf("no progress inside the step:\n%s", stderr)
	}
}

// Custom bursts start at each key's own offset, so that some straddle a
// window boundary and the fixed window's figure shows it; with --aligned
// they start on the boundaries, the fixed window holds the limit there, and
// a timing line under the verdict says that it does at this timing only.
func TestCompareBurstsAlignedOrNot(t *testing.T) {
	bursts := []string{"compare", "--memory-store", "--workload", "custom", "--shape", "bursts", "--rate", "150/min",
		"--on", "15s", "--off", "45s", "--keys", "20", "--alg", "fixed_window,gcra", "--time", "0"}
	fixedWindow := regexp.MustCompile(`(?m)^fixed_window +[0-9,]+ +[0-9,]+ +[0-9,]+ +([0-9.]+) `)
	for _, c := range []struct {
		aligned bool
		says    string
	}{
		{false, "each key from an offset of its own"},
		{true, "every key's at once, from a window boundary"},
	} {
		args := bursts
		if c.aligned {
			args = append(slices.Clone(bursts), "--aligned")
		}
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("aligned %v: exit %d: %s", c.aligned, code, stderr)
		}
		m := fixedWindow.FindStringSubmatch(stdout)
		if m == nil || !strings.Contains(stdout, c.says) {
			t.Fatalf("aligned %v: no fixed_window row, or the workload does not say %q:\n%s", c.aligned, c.says, stdout)
		}
		timing := strings.Contains(stdout, "\ntiming:  ")
		flattered := strings.Contains(strings.Join(strings.Fields(stdout), " "),
			"fixed_window held the limit at this timing only")
		switch {
		case !c.aligned && (m[1] == "1.00" || timing):
			t.Errorf("bursts at offsets of their own: fixed_window at %s×, timing line %v; want over 1.00× and none:\n%s",
				m[1], timing, stdout)
		case c.aligned && (m[1] != "1.00" || !timing || !flattered):
			t.Errorf("aligned bursts: fixed_window at %s×, timing line %v; want 1.00× and a line saying it holds "+
				"at this timing only:\n%s", m[1], timing, stdout)
		}
	}
}
