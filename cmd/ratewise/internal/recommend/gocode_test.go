package recommend

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// LeakyQueue stands for an algorithm type package algorithms does not have
// yet: goCode writes it from its fields, as it writes the others.
type LeakyQueue struct {
	Capacity int64
	Drain    algorithms.Rate
	Idle     time.Duration
	Strict   bool
	Label    string
	Share    float64
	hidden   int
}

func TestGoCode(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string
	}{
		{"window", algorithms.SlidingLog{Limit: 6000, Window: time.Minute}, "algorithms.SlidingLog{Limit: 6_000, " +
			"Window: time.Minute}"},
		{"month", algorithms.SlidingWindow{Limit: 10000, Window: MonthWindow, SubWindows: 31},
			"algorithms.SlidingWindow{Limit: 10_000, Window: 31 * 24 * time.Hour, SubWindows: 31}"},
		{"calendar", algorithms.CalendarWindow{Limit: 10000, Period: "month"},
			`algorithms.CalendarWindow{Limit: 10_000, Period: "month"}`},
		{"rate", algorithms.GCRA{Rate: algorithms.PerSecond(50), Burst: 20},
			"algorithms.GCRA{Rate: algorithms.Rate{Count: 50, Period: time.Second}, Burst: 20}"},
		{"a type recommend has never seen",
			LeakyQueue{
				Capacity: 1_500_000, Drain: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond},
				Idle: 90 * time.Second, Strict: true, Label: `a "b"`, Share: 0.25,
			},
			`recommend.LeakyQueue{Capacity: 1_500_000, Drain: algorithms.Rate{Count: 7, ` +
				`Period: 1500 * time.Millisecond}, Idle: 90 * time.Second, Strict: true, Label: "a \"b\"", Share: 0.25}`},
		{"zero values", LeakyQueue{},
			`recommend.LeakyQueue{Capacity: 0, Drain: algorithms.Rate{Count: 0, Period: 0}, Idle: 0, Strict: false, ` +
				`Label: "", Share: 0}`},
		{"odd durations", LeakyQueue{Idle: 1500 * time.Nanosecond},
			`recommend.LeakyQueue{Capacity: 0, Drain: algorithms.Rate{Count: 0, Period: 0}, ` +
				`Idle: 1500 * time.Nanosecond, Strict: false, Label: "", Share: 0}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := goCode(c.v)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	for name, v := range map[string]any{
		"a pointer":                  &algorithms.SlidingLog{Limit: 1, Window: time.Second},
		"a pointer field":            algorithms.CalendarWindow{Limit: 1, Period: "day", Location: time.UTC},
		"an unexported field is set": LeakyQueue{hidden: 1},
		"nil":                        nil,
	} {
		if got, err := goCode(v); err == nil {
			t.Errorf("%s: got %s, want an error", name, got)
		}
	}
}

// The Go code recommend prints for every algorithm in the registry, alone
// and as a set, compiles, and builds the very algorithm it was printed from:
// a program made of the printed code prints each value with %#v, and each
// must be what the configured algorithm prints.
func TestConfigIsGoThatBuildsTheAlgorithm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on the PATH")
	}
	inputs := []Input{
		{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1, Burst: 20},
		{QPS: 7 / 1.5, Window: 1500 * time.Millisecond, Precision: "approx", Keys: 1},
		{QPS: 10, Window: 90 * time.Second, Precision: "approx", Keys: 1, Burst: 5},
		{QPS: 20000, Window: time.Second, Precision: "approx", Keys: 1},
		{QPS: 5.0 / (15 * 60), Window: 15 * time.Minute, Precision: "exact", Keys: 1},
		{QPS: 10000 / MonthWindow.Seconds(), Window: MonthWindow, Calendar: Month, Keys: 1},
		{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Calendar: Day, Keys: 1},
	}
	var exprs, want []string
	var sets []string
	for _, in := range inputs {
		in.MemoryBudget, in.LatencyBudget = 1, time.Millisecond
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, k := range registry {
			if calendar.is(k) && in.Calendar == "" {
				continue // it has no window
			}
			alg, err := Configured(in, k.name)
			if err != nil {
				t.Fatalf("%s for %+v: %v", k.name, in, err)
			}
			code := configOf(in, candidate{kinds: []kind{k}})
			if strings.HasPrefix(code, "/*") {
				t.Fatalf("%s: %s", k.name, code)
			}
			exprs = append(exprs, code)
			want = append(want, fmt.Sprintf("%#v", alg))
		}
		sets = append(sets, configOf(in, candidate{kinds: registry[:2]}))
	}
	program := "package main\n\nimport " +
		"(\n\t\"fmt\"\n\t\"time\"\n\n\t\"github.com/ratewise/ratewise\"\n" +
		"\t\"github.com/ratewise/ratewise/algorithms\"\n\t\"github.com/ratewise/ratewise/store\"\n)\n\n" +
		"var _ = time.Second\n\n" +
		"func main() {\n\tfor _, a := range []algorithms.Algorithm{\n\t\t" + strings.Join(
		exprs,
		",\n\t\t",
	) + ",\n\t} {\n\t\tfmt.Printf(\"%#v\\n\", a)\n\t}\n}\n\n" +
		"func sets(store store.Store) {\n\t_, _ = " + strings.Join(
		sets,
		"\n\t_, _ = ",
	) + "\n}\n"
	// The program is built inside the module, to import its packages; a
	// directory starting with "_" is left out of ./... patterns.
	dir, err := os.MkdirTemp(".", "_gocode")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(goTool, "run", "./"+filepath.Base(dir)).CombinedOutput()
	if err != nil {
		t.Fatalf("the printed code does not run: %v\n%s\n%s", err, out, program)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(want) {
		t.Fatalf("the program printed %d values, want %d:\n%s", len(got), len(want), out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s builds\n%s\nwant\n%s", exprs[i], got[i], want[i])
		}
	}
}
