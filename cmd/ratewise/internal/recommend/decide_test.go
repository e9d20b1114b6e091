package recommend

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// figures returns synthetic measurements: the sliding log costs logBytes
// per key, the others a few hundred bytes, every decision 1µs.
func figures(logBytes float64) map[string]Figures {
	f := func(name string, bytes, over float64) Figures {
		return Figures{Algorithm: name, BytesPerKey: bytes, Store: "memory",
			Time:      Spread{Median: time.Microsecond, Min: time.Microsecond, Max: time.Microsecond, Samples: 5},
			Overshoot: map[string]float64{"poisson": over, "boundary": over, "worst": 2}}
	}
	return map[string]Figures{
		"fixed_window":   f("fixed_window", 200, 2),
		"sliding_log":    f("sliding_log", logBytes, 1),
		"sliding_window": f("sliding_window", 500, 1.05),
		"token_bucket":   f("token_bucket", 200, 1.2),
		"gcra":           f("gcra", 200, 1.2),
		// The calendar window is measured only for a calendar quota; for
		// any other question, recommend leaves it out.
		"calendar_window": f("calendar_window", 220, 2),
	}
}

func TestDecide(t *testing.T) {
	cases := []struct {
		name     string
		in       Input
		logBytes float64
		want     string
		// disagree is a phrase the disagreement with the classic
		// thresholds must contain, or "" for none.
		disagree string
	}{
		{
			"exact and small",
			Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000},
			60e3,
			"sliding_log",
			"",
		},
		{
			"exact with a burst",
			Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000, Burst: 20},
			60e3,
			"sliding_log + gcra",
			"",
		},
		{
			"exact with a burst of the whole limit",
			Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000, Burst: 6000},
			60e3,
			"sliding_log",
			"",
		},
		{
			"calendar day",
			Input{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Calendar: Day, Keys: 1000},
			60e3,
			"calendar_window",
			"",
		},
		{
			"calendar month",
			Input{QPS: 10000 / MonthWindow.Seconds(), Window: MonthWindow, Calendar: Month, Keys: 1000},
			60e3,
			"calendar_window",
			"no fixed window follows the months",
		},
		{
			"calendar day with a burst",
			Input{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Calendar: Day, Keys: 1000, Burst: 100},
			60e3,
			"calendar_window + gcra",
			"",
		},
		{
			"exact over the memory budget",
			Input{QPS: 10, Window: 24 * time.Hour, Precision: "exact", Keys: 100_000},
			8e6,
			"sliding_window",
			"ignores the number of keys",
		},
		{
			"exact above the classic QPS threshold, within budget",
			Input{QPS: 5000, Window: time.Minute, Precision: "exact", Keys: 10},
			3e6,
			"sliding_log",
			"rule the sorted set out",
		},
		{
			"exact above the classic QPS threshold but a short window",
			Input{QPS: 5000, Window: 10 * time.Second, Precision: "exact", Keys: 10},
			5e5,
			"sliding_log",
			"",
		},
		{"approx", Input{QPS: 100, Window: time.Minute, Precision: "approx", Keys: 1000}, 60e3, "sliding_window", ""},
		{
			"approx above the classic counter QPS",
			Input{QPS: 20000, Window: 10 * time.Second, Precision: "approx", Keys: 1000},
			2e6,
			"sliding_window",
			"QPS alone does not rule it out",
		},
		{
			"approx with a burst",
			Input{QPS: 50, Window: time.Second, Precision: "approx", Keys: 1000, Burst: 20},
			1e3,
			"gcra",
			"",
		},
		{
			"approx, counter over the budget",
			Input{QPS: 50, Window: time.Second, Precision: "approx", Keys: 3_000_000},
			1e3,
			"gcra",
			"",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.MemoryBudget, c.in.LatencyBudget = 1e9, time.Millisecond
			if err := c.in.Validate(); err != nil {
				t.Fatal(err)
			}
			d, err := Choose(c.in, figures(c.logBytes))
			if err != nil {
				t.Fatal(err)
			}
			if d.Algorithm != c.want {
				t.Fatalf("got %s, want %s; reasons: %q", d.Algorithm, c.want, d.Reasons)
			}
			if len(d.Reasons) < 2 {
				t.Fatalf("want at least two reasons, got %q", d.Reasons)
			}
			joined := strings.Join(d.Disagreements, "\n")
			switch {
			case c.disagree == "" && joined != "":
				t.Fatalf("unexpected disagreement with the classic thresholds: %s", joined)
			case c.disagree != "" && !strings.Contains(joined, c.disagree):
				t.Fatalf("disagreements %q do not say %q", joined, c.disagree)
			}
		})
	}
}

// A log over the time budget is rejected with the figure and the budget
// it failed, and the fallback is the nearest approximation, which says it
// is not exact.
func TestDecideSlowLogFallsBack(t *testing.T) {
	figs := figures(1e3)
	slow := figs["sliding_log"]
	slow.Time = Spread{Median: 5 * time.Millisecond, Min: 4 * time.Millisecond, Max: 6 * time.Millisecond, Samples: 5}
	figs["sliding_log"] = slow
	in := Input{
		QPS:           100,
		Window:        time.Minute,
		Precision:     "exact",
		Keys:          1,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	d, err := Choose(in, figs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Algorithm != "sliding_window" || !strings.Contains(d.Reasons[0], "not exact") {
		t.Fatalf("a log over the latency budget: got %s, %q", d.Algorithm, d.Reasons)
	}
	if len(d.Rejected) != 1 || !strings.Contains(d.Rejected[0], "sliding_log: time: a decision takes 5ms") ||
		!strings.Contains(d.Rejected[0], "against the 1ms budget") {
		t.Fatalf("the rejection does not name the budget with the figure: %q", d.Rejected)
	}
}

// The fallback is checked against the same budgets: when nothing fits, the
// decision says so and names the closest candidate.
func TestDecideNothingFits(t *testing.T) {
	figs := figures(1e6)
	for name, f := range figs {
		f.BytesPerKey = 2e3
		f.Time.Median = 2 * time.Millisecond
		figs[name] = f
	}
	gcra := figs["gcra"]
	gcra.Time.Median = 1500 * time.Microsecond
	figs["gcra"] = gcra
	in := Input{
		QPS:           100,
		Window:        time.Minute,
		Precision:     "exact",
		Keys:          1,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	d, err := Choose(in, figs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Algorithm != "" || d.Closest != "gcra" || d.ClosestOver != 1.5 {
		t.Fatalf("nothing fits: got %q, closest %q at %.2f×", d.Algorithm, d.Closest, d.ClosestOver)
	}
	if len(d.Rejected) != 3 {
		t.Fatalf("want every candidate rejected with its reason, got %q", d.Rejected)
	}
}

// A figure within the margin of its budget is reported, since the answer
// may change there on another run.
func TestDecideSaysWhenCloseToABudget(t *testing.T) {
	figs := figures(1e3)
	log := figs["sliding_log"]
	log.Time = Spread{
		Median:  900 * time.Microsecond,
		Min:     850 * time.Microsecond,
		Max:     1100 * time.Microsecond,
		Samples: 5,
	}
	figs["sliding_log"] = log
	in := Input{
		QPS:           100,
		Window:        time.Minute,
		Precision:     "exact",
		Keys:          1,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	d, err := Choose(in, figs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Algorithm != "sliding_log" || len(d.Close) != 1 || !strings.Contains(d.Close[0], "sliding_log's time") {
		t.Fatalf("got %s, close %q", d.Algorithm, d.Close)
	}
}

// The compact log is preferred for an exact count when it is measured.
func TestDecidePrefersTheCompactLog(t *testing.T) {
	figs := figures(60e3)
	c := figs["sliding_log"]
	c.Algorithm, c.BytesPerKey = "compact_log", 5e3
	figs["compact_log"] = c
	in := Input{
		QPS:           100,
		Window:        time.Minute,
		Precision:     "exact",
		Keys:          1000,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	d, err := Choose(in, figs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Algorithm != "compact_log" || d.Config != "algorithms.CompactLog{Limit: 6_000, Window: time.Minute}" {
		t.Fatalf("got %s, %s", d.Algorithm, d.Config)
	}
}

func TestValidate(t *testing.T) {
	ok := Input{
		QPS:           1,
		Window:        time.Second,
		Precision:     "exact",
		Keys:          1,
		MemoryBudget:  1,
		LatencyBudget: time.Millisecond,
	}
	for name, mutate := range map[string]func(*Input){
		"qps":       func(in *Input) { in.QPS = 0 },
		"window":    func(in *Input) { in.Window = 0 },
		"precision": func(in *Input) { in.Precision = "roughly" },
		"keys":      func(in *Input) { in.Keys = 0 },
		"burst":     func(in *Input) { in.Burst = -1 },
		"tiny":      func(in *Input) { in.QPS = 0.1 },
		"big burst": func(in *Input) { in.Burst = 2 },
		"calendar":  func(in *Input) { in.Calendar = "week" },
		"day":       func(in *Input) { in.Calendar = Day },
	} {
		in := ok
		mutate(&in)
		if err := in.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid input: %v", err)
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[float64]string{
		512: "512 B", 1500: "1.5 KB", 626e3: "626 KB", 3.12e9: "3.12 GB", 8.97e12: "8.97 TB",
	} {
		if got := Bytes(in); got != want {
			t.Errorf("Bytes(%g): got %q, want %q", in, got, want)
		}
	}
}

// The configuration recommended for a calendar month's quota, on a key
// with no date in it, admits exactly the quota in every month of a year of
// steady traffic; the fixed window of 31 days it replaces resets inside
// months and admits more.
func TestMonthQuotaCountsEveryCalendarMonth(t *testing.T) {
	in := Input{
		QPS:           100 / MonthWindow.Seconds(),
		Window:        MonthWindow,
		Calendar:      Month,
		Keys:          1,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := Choose(in, figures(1e3))
	if err != nil {
		t.Fatal(err)
	}
	recommended, err := Configured(in, d.Algorithm)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.Config, `algorithms.CalendarWindow{Limit: 100, Period: "month"}`; got != want {
		t.Fatalf("the printed configuration: got %s, want %s", got, want)
	}
	if got, want := recommended, (algorithms.CalendarWindow{Limit: 100, Period: "month"}); got != want {
		t.Fatalf("the configuration measured: got %#v, want %#v", got, want)
	}
	perMonth := func(alg algorithms.Algorithm) map[string]int {
		s := storememory.New()
		admitted := map[string]int{}
		for at := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC); at.Year() == 2026; at = at.Add(time.Hour) {
			month := at.Format("2006-01")
			res, err := s.Decide(context.Background(), store.Key{Name: "user:1001"}, alg, at, 1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				admitted[month]++
			}
		}
		return admitted
	}
	for month, n := range perMonth(recommended) {
		if n != 100 {
			t.Errorf("%s: %s admitted %d in %s, want the quota, 100", d.Algorithm, d.Config, n, month)
		}
	}
	over := 0
	for _, n := range perMonth(algorithms.FixedWindow{Limit: 100, Window: MonthWindow}) {
		if n > 100 {
			over++
		}
	}
	if over == 0 {
		t.Errorf("a fixed window of 31 days admitted no more than the quota in any month: the test shows nothing")
	}
}

// A calendar quota is the calendar window, which resets at the first
// instant of each UTC period and says how to set a zone; when it does not
// fit the budgets, the windowed recipe that counts the same UTC period
// follows: a fixed window of 24h for a day, a sliding window counter of
// 31 days for a month.
func TestCalendarQuota(t *testing.T) {
	for _, c := range []struct {
		name     string
		in       Input
		says     string
		fallback string
	}{
		{"day", Input{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Calendar: Day},
			`algorithms.CalendarWindow{Limit: 10_000, Period: "day", Location: loc}`, "fixed_window"},
		{"month", Input{QPS: 10000 / MonthWindow.Seconds(), Window: MonthWindow, Calendar: Month},
			`algorithms.CalendarWindow{Limit: 10_000, Period: "month", Location: loc}`, "sliding_window"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Keys, c.in.MemoryBudget, c.in.LatencyBudget = 1000, 1e9, time.Millisecond
			figs := figures(60e3)
			d, err := Choose(c.in, figs)
			if err != nil {
				t.Fatal(err)
			}
			reasons := strings.Join(d.Reasons, "\n")
			for _, want := range []string{"resets at the first instant of each UTC " + c.in.Calendar, c.says,
				"ratewise.Stack"} {
				if !strings.Contains(reasons, want) {
					t.Errorf("the reasons for %s do not say %q: %s", d.Algorithm, want, reasons)
				}
			}
			over := figs["calendar_window"]
			over.BytesPerKey = 2e6 // 2 GB for 1,000 keys
			figs["calendar_window"] = over
			if d, err = Choose(c.in, figs); err != nil {
				t.Fatal(err)
			}
			if d.Algorithm != c.fallback {
				t.Fatalf("calendar window over the memory budget: got %s, want %s; rejected: %q",
					d.Algorithm, c.fallback, d.Rejected)
			}
		})
	}
}

// A question about a window, not a calendar quota, never considers the
// calendar window, which has no window.
func TestWindowedQuestionsLeaveTheCalendarOut(t *testing.T) {
	for _, in := range []Input{
		{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Precision: "approx", Keys: 1},
		{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Precision: "exact", Keys: 1, Burst: 5},
		{QPS: 10, Window: time.Minute, Precision: "approx", Keys: 1, Burst: 5},
	} {
		for _, c := range registry.candidates(in, figures(60e3)) {
			for _, k := range c.kinds {
				if calendar.is(k) {
					t.Errorf("%+v: %s is a candidate", in, c.name())
				}
			}
		}
		for _, k := range algorithms.Kinds() {
			if got, want := Measures(in, k), algo.FamilyOf(k) != algo.FamilyCalendar; got != want {
				t.Errorf("%+v: Measures(%s): got %v, want %v", in, k, got, want)
			}
		}
	}
}
