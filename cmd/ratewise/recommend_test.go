package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay"
)

// The recommendation names the classic decision tree's pick, says in a
// phrase what that tree is, and lists where the measurements disagree with
// the classic thresholds, on synthetic figures so that nothing is measured.
func TestRecommendationStatesTheClassicTree(t *testing.T) {
	in := recommend.Input{
		QPS:           5000,
		Window:        time.Minute,
		Precision:     "exact",
		Keys:          10,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	m := &recommend.Measurements{
		Figures:       map[string]recommend.Figures{},
		Store:         "memory",
		Records:       in.Limit(),
		Measured:      in.Limit(),
		AccuracyLimit: in.Limit(),
	}
	for _, name := range replay.AlgorithmNames {
		bytes := 200.0
		if name == "sliding_log" || name == "compact_log" {
			bytes = 3e6
		}
		m.Figures[name] = recommend.Figures{Algorithm: name, BytesPerKey: bytes, Store: "memory",
			Time:      recommend.Spread{Median: time.Microsecond, Min: time.Microsecond, Max: time.Microsecond, Samples: 5},
			Overshoot: map[string]float64{"poisson": 1, "boundary": 1, "worst": 1}}
	}
	d, err := recommend.Choose(in, m.Figures)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	recommend.Write(&out, in, m, d, nil, "the in-memory store")
	got := out.String()
	for _, want := range []string{
		"Recommendation: compact_log, for 300,000 requests per 1m per key (QPS 5000), exact, 10 key(s)\n",
		"The classic decision tree (" + recommend.ClassicTree + ") picks sliding_log.\n",
		"Where these measurements disagree with the classic thresholds:\n",
		"- the classic thresholds rule the sorted set out above QPS 1,000 with a window over 10s;",
		"Measured on the in-memory store,",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the recommendation does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(strings.ToLower(got), "note") {
		t.Errorf("the recommendation refers to notes the user cannot read:\n%s", got)
	}
}

// stabilityRuns is how many times TestRecommendationsAreStable measures
// each question: three times, and once under the race detector, which
// slows every measurement several times over and checks nothing a second
// measurement would reach (the guide's transcript is still checked).
func stabilityRuns() int {
	if race.Enabled {
		return 1
	}
	return 3
}

// Every example question of docs/choosing.md (the README's among them)
// gets the same recommendation on every run on a real Redis, and the one
// docs/choosing.md shows. Accuracy is replayed on a simulated clock and is
// the same on every run by construction, so the runs after the first
// measure again only what can vary: memory and time on Redis.
func TestRecommendationsAreStable(t *testing.T) {
	redistest.Require(t)
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	ctx := context.Background()
	target, err := replay.DialRedis(ctx, srv.Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "choosing.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, example := range guideExamples {
		name := strings.Join(example, " ")
		in, err := questionOf(example)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m, err := recommend.Measure(ctx, in, target, func(string) {})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		d, err := recommend.Choose(in, m.Figures)
		if err != nil {
			t.Fatal(err)
		}
		want := recommend.Headline(in, d)
		runs := stabilityRuns()
		if testing.Short() {
			runs = 1 // the guide's transcript only
		}
		for run := 1; run < runs; run++ {
			again, err := recommend.Cost(ctx, in, target, func(string) {})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for alg, f := range again.Figures {
				first := m.Figures[alg]
				f.Overshoot, f.FalseAdmits, f.FalseDenials = first.Overshoot, first.FalseAdmits, first.FalseDenials
				again.Figures[alg] = f
			}
			d2, err := recommend.Choose(in, again.Figures)
			if err != nil {
				t.Fatal(err)
			}
			if got := recommend.Headline(in, d2); got != want {
				t.Errorf(
					"%s: run %d recommends\n%s\nrun 1\n%s\n(close to a budget: %q, then %q)",
					name,
					run+1,
					got,
					want,
					d.Close,
					d2.Close,
				)
			}
		}
		// The guide's transcript says what this run says, up to the
		// capacity, the measured figures aside.
		var out bytes.Buffer
		recommend.Write(&out, in, m, d, nil, "")
		got, _, _ := strings.Cut(out.String(), "\nCapacity:")
		command := "$ go run ./cmd/ratewise recommend " + name + "\n"
		_, shown, found := strings.Cut(string(doc), command)
		shown, _, _ = strings.Cut(shown, "\nCapacity:")
		if !found || masked(shown) != masked(got) {
			t.Errorf(
				"docs/choosing.md does not show what %s recommends now:\n%s\nregenerate it with go run ./cmd/ratewise guide",
				command,
				got,
			)
		}
	}
}

// masked is text with every number replaced by #, so that measured
// figures compare equal.
func masked(text string) string {
	return regexp.MustCompile(`[0-9][0-9.,_]*`).ReplaceAllString(text, "#")
}

// The README's recommend example is one of the guide's, so that the test
// above checks it.
func TestReadmeRecommendIsAnExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, example := range guideExamples {
		if bytes.Contains(readme, []byte("ratewise recommend "+strings.Join(example, " ")+"`")) {
			found++
		}
	}
	if found == 0 || bytes.Count(readme, []byte("ratewise recommend --")) != found {
		t.Errorf(
			"README.md shows a recommend example that is not in guideExamples (%d of %d found)",
			found,
			bytes.Count(readme, []byte("ratewise recommend --")),
		)
	}
}

// --calendar day and month recommend the calendar window, the quota
// itself, printed as the Go code that builds it, on synthetic figures for
// every kind so that nothing is measured.
func TestCalendarRecommendsTheCalendarWindow(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--qps", "10000/day", "--calendar", "day"}, `algorithms.CalendarWindow{Limit: 10_000, Period: "day"}`},
		{[]string{"--qps", "10000/month", "--calendar", "month"},
			`algorithms.CalendarWindow{Limit: 10_000, Period: "month"}`},
	} {
		in, err := questionOf(c.args)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		figs := map[string]recommend.Figures{}
		for _, k := range algorithms.Kinds() {
			figs[k.String()] = recommend.Figures{Algorithm: k.String(), BytesPerKey: 200, Store: "memory",
				Time:      recommend.Spread{Median: time.Microsecond, Min: time.Microsecond, Max: time.Microsecond, Samples: 5},
				Overshoot: map[string]float64{"poisson": 1, "boundary": 2, "worst": 2}}
		}
		d, err := recommend.Choose(in, figs)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := d.Algorithm, "calendar_window"; got != want {
			t.Errorf("%q: got %s, want %s; rejected: %q", c.args, got, want, d.Rejected)
		}
		if got := d.Config; got != c.want {
			t.Errorf("%q: got %s, want %s", c.args, got, c.want)
		}
	}
}

// --qps takes a number or a rate as the library writes it, and a bad
// question is an error that names the flag.
func TestQuestionOf(t *testing.T) {
	in, err := questionOf([]string{"--qps", "5/15m", "--precision", "exact"})
	if err != nil || in.Limit() != 5 || in.Window != 15*time.Minute {
		t.Fatalf("5/15m: got limit %d per %v, %v", in.Limit(), in.Window, err)
	}
	in, err = questionOf([]string{"--qps", "0.5", "--window", "1m", "--precision", "approx", "--memory", "512mb"})
	if err != nil || in.Limit() != 30 || in.MemoryBudget != 512e6 {
		t.Fatalf("0.5 over 1m, 512mb: got limit %d, memory %d, %v", in.Limit(), in.MemoryBudget, err)
	}
	in, err = questionOf([]string{"--qps", "10000/month", "--calendar", "month"})
	if err != nil || in.Limit() != 10000 || in.Window != recommend.MonthWindow {
		t.Fatalf("10000/month: got limit %d per %v, %v", in.Limit(), in.Window, err)
	}
	// --total-qps is shared among the keys: 5000 per second among 100,000
	// keys is 3 per minute each, and a count per period is read as --qps's.
	for _, total := range []string{"5000", "300000/min"} {
		in, err = questionOf([]string{"--total-qps", total, "--window", "1m", "--precision", "exact", "--keys", "100000"})
		if err != nil || in.Limit() != 5000*60/100_000 || in.TotalQPS != 5000 || in.Keys != 100_000 {
			t.Fatalf("--total-qps %s among 100,000 keys: got limit %d per %v, total %g, %v",
				total, in.Limit(), in.Window, in.TotalQPS, err)
		}
	}
	for _, bad := range [][]string{
		{"--qps", "5000", "--total-qps", "5000", "--window", "1m", "--precision", "exact"},
		{"--total-qps", "100", "--keys", "100000", "--window", "1s", "--precision", "exact"},
		{"--total-qps", "-3", "--window", "1m", "--precision", "exact"},
		{"--window", "1m", "--precision", "exact"},
		{"--qps", "600/min", "--precision", "approx", "--burst", "100000"},
		{"--qps", "10000/month", "--precision", "approx"},
		{"--qps", "lots", "--window", "1m", "--precision", "exact"},
		{"--qps", "5/fortnight", "--precision", "exact"},
	} {
		var ue usageError
		if _, err := questionOf(bad); err == nil {
			t.Errorf("%q: no error", bad)
		} else if !errors.As(err, &ue) && !errors.Is(err, recommend.ErrInvalid) {
			t.Errorf("%q: %v is neither a usage error nor recommend.ErrInvalid", bad, err)
		}
	}
}

// The guide prints command lines without the Redis address, which may
// hold a password.
func TestGuideRedactsRedisAddresses(t *testing.T) {
	got := strings.Join(
		redacted([]string{"recommend", "--redis", "redis://:secret@h:6379/0", "--cluster=redis://:pw@h:1", "--keys", "3"}),
		" ",
	)
	if want := "recommend --redis ADDR --cluster=ADDR --keys 3"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
