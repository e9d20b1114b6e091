package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/ratewise/ratewise/algorithms"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

	cases := []struct {
		name string
		args []string
		// says is a phrase the error line must contain.
		says string
	}{
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown workload", []string{"compare", "--workload", "tsunami"}, `unknown workload "tsunami"`},
		{"unknown algorithm", []string{"compare", "--alg", "leaky_sieve"}, `unknown algorithm "leaky_sieve"`},
		{"bad duration", []string{"compare", "--window", "soon"}, `invalid value "soon" for flag -window`},
		{"negative timed phase", []string{"compare", "--time", "-1s"}, "-time must be >= 0"},
		{"bad rate", []string{"compare", "--workload", "custom", "--rate", "lots"}, `rate "lots"`},
		{"zero limit", []string{"compare", "--workload", "custom", "--limit", "0"}, "limit must be > 0"},
		{"missing trace", []string{"compare", "--trace", "/nonexistent/trace.log"}, "cannot read the trace"},
		{"malformed trace", []string{"compare", "--trace", badTrace}, "bad.log:2"},
		{"unreachable redis", []string{"compare", "--redis", closed}, closed},
		{"unreachable cluster", []string{"compare", "--cluster", closed}, closed},
		{"unknown format", []string{"compare", "--format", "xml"}, `unknown format "xml"`},
		{"two redises", []string{"compare", "--start-redis", "--redis", closed}, "give one of -redis, -cluster and -start-redis"},
		{"stray argument", []string{"compare", "boundary"}, `unexpected argument "boundary"`},
		{"recommend without precision", []string{"recommend", "--qps", "10", "--window", "1m"}, "--precision must be exact or approx"},
		{"recommend bad qps", []string{"recommend", "--qps", "-3", "--window", "1m", "--precision", "exact"}, "--qps must be > 0"},
		{"recommend bad memory", []string{"recommend", "--qps", "3", "--window", "1m", "--precision", "exact", "--memory", "much"}, `-memory "much"`},
		{"recommend unreachable redis", []string{"recommend", "--qps", "3", "--window", "1m", "--precision", "exact", "--redis", closed}, closed},
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
			lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			// Progress lines may precede the error; the error is one line.
			for _, l := range lines[:len(lines)-1] {
				if !strings.HasPrefix(l, "ratewise: [") {
					t.Errorf("stderr has more than the error line: %q", stderr)
				}
			}
			if !strings.HasPrefix(last, "ratewise ") || !strings.Contains(last, c.says) {
				t.Errorf("error line %q does not say %q", last, c.says)
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr: %s", stderr)
			}
		})
	}
}

func TestCompareCSVAndJSON(t *testing.T) {
	code, stdout, stderr := runCLI(t, "compare", "--workload", "boundary", "--time", "0", "--format", "csv")
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
	// Every algorithm × 2 stores.
	if got, want := len(recs)-1, 2*len(algorithms.Kinds()); got != want {
		t.Fatalf("csv rows: got %d, want %d", got, want)
	}
	for _, r := range recs[1:] {
		if r[col["algorithm"]] == "fixed_window" && r[col["overshoot"]] != "2.0000" {
			t.Errorf("fixed window overshoot on %s: %s, want 2.0000", r[col["store"]], r[col["overshoot"]])
		}
	}
	if n := 2 * len(algorithms.Kinds()); !strings.Contains(stderr, fmt.Sprintf("ratewise: [%d/%d]", n, n)) {
		t.Errorf("stderr (not a terminal) should carry plain progress lines, got %q", stderr)
	}

	code, stdout, stderr = runCLI(t, "compare", "--workload", "custom", "--shape", "steady", "--rate", "3/s", "--limit", "100", "--keys", "3", "--duration", "2m", "--alg", "gcra,sliding_log", "--time", "0", "--format", "json")
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
	if len(rep.Workloads) != 1 || rep.Workloads[0].Name != "custom" || len(rep.Results) != 2 || rep.Results[0].Requests != 3*3*120 {
		t.Fatalf("json report: %+v", rep)
	}
}

func TestCompareWritesCharts(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCLI(t, "compare", "--workload", "boundary,steady-at", "--alg", "fixed_window", "--time", "0", "--svg", dir)
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
