package recommend

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// written is the recommendation for in on synthetic figures, with dep's
// deployment, as recommend prints it.
func written(t *testing.T, in Input, dep Deployment) string {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	f := figures(60e3)
	d, err := Choose(in, f)
	if err != nil {
		t.Fatal(err)
	}
	m := &Measurements{Figures: f, Store: "memory", Records: in.Limit(), Measured: in.Limit(),
		AccuracyLimit: in.Limit()}
	var out bytes.Buffer
	Write(&out, in, m, d, dep, "the in-memory store")
	return strings.Join(strings.Fields(out.String()), " ")
}

// The output says whether the rate it read is each key's or all keys'
// together, and what that makes of the other.
func TestRateSaysPerKeyOrTotal(t *testing.T) {
	perKey := Input{QPS: 100, Asked: "--qps 100", Window: time.Minute, Precision: "exact", Keys: 1000,
		MemoryBudget: 1e9, LatencyBudget: time.Millisecond}
	total := perKey
	total.Asked = "--total-qps 5000"
	total.Keys = 100_000
	if err := total.ShareTotal(5000); err != nil {
		t.Fatal(err)
	}
	// 5000 per second among 100,000 keys is 0.05 each, 3 per minute.
	if got, want := total.Limit(), int64(math.Round(5000*60.0/100_000)); got != want || total.TotalQPS != 5000 {
		t.Fatalf("--total-qps 5000 among 100,000 keys: limit %d per key, total %g; want %d, 5000",
			got, total.TotalQPS, want)
	}
	// 130 per second among 3 keys is 43.3 each, a limit of 43 per second.
	rounded := perKey
	rounded.Asked, rounded.Window, rounded.Keys = "--total-qps 130", time.Second, 3
	if err := rounded.ShareTotal(130); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   Input
		says string
	}{
		{rounded, fmt.Sprintf("for each key; %.6g per 1s rounded to a whole count, so %d decisions per second in all",
			130/3.0, rounded.Limit()*3)},
		{perKey, fmt.Sprintf("Rate: --qps 100 is each key's rate, not the total: 1,000 keys at up to 100 requests "+
			"per second each make up to %s decisions per second in all", report.Int(100*1000))},
		{total, "Rate: --total-qps 5000 is the rate of all keys together, shared among 100,000 keys: " +
			"0.05 per second (3 per 1m) for each key."},
	} {
		out := written(t, c.in, nil)
		if !strings.Contains(out, c.says) {
			t.Errorf("%s: the output does not say %q:\n%s", c.in.Asked, c.says, out)
		}
		if strings.Contains(out, "Check the input") {
			t.Errorf("%s: a plausible question is called into question:\n%s", c.in.Asked, out)
		}
	}
}

// A question that needs more than anyone runs says so, names the input
// that made it, and, when --qps was per key, the question --total-qps
// would ask, which is a valid one.
func TestImplausibleQuestionsAreCalledIntoQuestion(t *testing.T) {
	in := Input{QPS: 5000, Asked: "--qps 5000", Window: time.Minute, Precision: "approx", Keys: 100_000,
		MemoryBudget: 1e12, LatencyBudget: time.Millisecond}
	out := written(t, in, nil)
	need := int64(5000 * 100_000)
	for _, want := range []string{
		fmt.Sprintf("Check the input: this question needs %s decisions per second at the limit, more than %s",
			report.Int(need), report.Int(MostDecisions)),
		fmt.Sprintf("--qps 5000 is per key: 5000/s × 100,000 keys = %s/s.", report.Int(need)),
		"Did you mean --total-qps 5000, 0.05 per second (3 per 1m) for each key?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	// The question it may have meant is a valid one.
	meant := in
	meant.Asked = "--total-qps 5000"
	if err := meant.ShareTotal(5000); err != nil || meant.Validate() != nil || meant.Limit() != 3 {
		t.Errorf("--total-qps 5000 among 100,000 keys: %v, %v, limit %d", err, meant.Validate(), meant.Limit())
	}

	// A total that would be called into question itself is no question
	// to suggest.
	in.QPS, in.Asked, in.Keys = 2*MostDecisions, fmt.Sprintf("--qps %d", 2*MostDecisions), 10
	if out := written(t, in, nil); !strings.Contains(out, "Check the input") || strings.Contains(out, "Did you mean") {
		t.Errorf("%s: want the input called into question, and no --total-qps suggested:\n%s", in.Asked, out)
	}

	// Below MostDecisions, what one Redis serves decides: masters beyond
	// MostMasters, coalesced, call the question into question.
	in = Input{QPS: 800, Asked: "--qps 800", Window: time.Second, Precision: "approx", Keys: 10_000,
		MemoryBudget: 1e12, LatencyBudget: time.Millisecond}
	redis := &Capacity{Algorithm: "sliding_window", OneAtATime: Rate{10_000, 9_000, 11_000},
		Coalesced: Rate{20_000, 19_000, 21_000}}
	masters := int(math.Ceil(800 * 10_000 / (utilisation * 20_000)))
	if masters <= MostMasters || 800*10_000 > MostDecisions {
		t.Fatalf("the question needs %d masters: not a test of MostMasters alone", masters)
	}
	out = written(t, in, redis)
	for _, want := range []string{
		fmt.Sprintf("Check the input: this question needs %s decisions per second at the limit, and %s Redis "+
			"masters coalesced", report.Int(800*10_000), report.Int(int64(masters))),
		"--qps 800 is per key: 800/s × 10,000 keys",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	// --total-qps 800 among 10,000 keys is less than one request per key
	// per second: no question to suggest.
	if strings.Contains(out, "Did you mean") {
		t.Errorf("the output suggests a question that is not valid:\n%s", out)
	}

	// On PostgreSQL, more than MostPostgres times what the database served.
	pg := &Sizing{Algorithm: "gcra", Load: []Load{{Callers: 16, Keys: 10_000, PerSecond: Rate{5_000, 4_000, 6_000}}}}
	in = Input{QPS: 10, Asked: "--total-qps 60000", TotalQPS: 60_000, Window: time.Second, Precision: "approx",
		Keys: 6_000, MemoryBudget: 1e12, LatencyBudget: time.Millisecond}
	out = written(t, in, pg)
	for _, want := range []string{
		fmt.Sprintf("and %.3g× the 5,000 decisions per second this PostgreSQL database served here", 60_000/5_000.0),
		"--total-qps 60000 is the rate of all keys together.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not say %q:\n%s", want, out)
		}
	}
	in.QPS, in.TotalQPS, in.Asked = 5, 30_000, "--total-qps 30000" // 6× what it served
	if out := written(t, in, pg); strings.Contains(out, "Check the input") {
		t.Errorf("%s, 6× what the database served, is called into question:\n%s", in.Asked, out)
	}
}
