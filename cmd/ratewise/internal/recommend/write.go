package recommend

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// utilisation is the share of one Redis process's CPU that capacity
// planning fills, leaving the rest for peaks, replication and failover.
const utilisation = 0.5

// Headline is the recommendation's first line: what was asked and what is
// recommended, with no measured figure in it, so that it is the same on
// every run that decides the same.
func Headline(in Input, d Decision) string {
	what := d.Algorithm
	if what == "" {
		what = "nothing fits the budgets; the closest is " + d.Closest
	}
	var b strings.Builder
	switch in.Calendar {
	case Day:
		fmt.Fprintf(&b, "Recommendation: %s, for %s requests per calendar day (UTC) per key", what, report.Int(in.Limit()))
	case Month:
		fmt.Fprintf(&b, "Recommendation: %s, for %s requests per calendar month per key", what, report.Int(in.Limit()))
	default:
		fmt.Fprintf(
			&b,
			"Recommendation: %s, for %s requests per %s per key (QPS %.6g), %s",
			what,
			report.Int(in.Limit()),
			report.Duration(in.Window),
			in.QPS,
			in.Precision,
		)
	}
	fmt.Fprintf(&b, ", %s key(s)", report.Int(in.Keys))
	if in.Burst > 0 {
		fmt.Fprintf(&b, ", bursts of %s", report.Int(in.Burst))
	}
	return b.String()
}

// A Deployment is what a deployment of the recommendation needs, measured
// on its store: a *Capacity on Redis, a *Sizing on PostgreSQL.
type Deployment interface {
	// write finishes the capacity paragraph that says what the question
	// needs, need decisions per second at the limit.
	write(w io.Writer, in Input, d Decision, need float64)
	// beyond says what a deployment serving need decisions per second
	// takes, as "34,376 Redis masters ...", when that is more than anyone
	// runs (see checkInput); "" otherwise.
	beyond(need float64) string
}

// What anyone runs: a question that needs more is more likely a mistake in
// its input, and the recommendation says which input made it.
const (
	// MostDecisions is decisions per second at the limit, in all: a rate
	// only the largest services reach.
	MostDecisions = 10_000_000
	// MostMasters is Redis masters, coalesced: Redis Cluster is designed
	// for up to 1,000 nodes, 500 masters with a replica each.
	MostMasters = 500
	// MostPostgres is how many times the decisions per second one
	// PostgreSQL database served here the question may need: the store
	// runs on one primary, and a database serves more to many app servers
	// than to this one process, but not this many times more.
	MostPostgres = 10
)

// Write prints the recommendation, its reasons and rejections, the
// capacity it needs, and the measurements behind it. where describes the
// store the costs were measured on; dep is nil when they were measured on
// the in-memory store.
func Write(w io.Writer, in Input, m *Measurements, d Decision, dep Deployment, where string) {
	registry.write(w, in, m, d, dep, where)
}

func (cat catalog) write(w io.Writer, in Input, m *Measurements, d Decision, dep Deployment, where string) {
	fmt.Fprintf(w, "%s\n\n    %s\n\n", Headline(in, d), d.Config)
	fmt.Fprintf(w, "Rate: %s.\n", rateText(in))
	if check := checkInput(in, dep); check != "" {
		fmt.Fprintf(w, "Check the input: %s\n", check)
	}
	fmt.Fprintln(w, "\nWhy:")
	for _, r := range d.Reasons {
		fmt.Fprintf(w, "- %s.\n", r)
	}
	if len(d.Rejected) > 0 {
		fmt.Fprintln(w, "\nRejected, in the order tried:")
		for _, r := range d.Rejected {
			fmt.Fprintf(w, "- %s.\n", r)
		}
	}
	if len(d.Close) > 0 {
		fmt.Fprintln(w, "\nClose to a budget, where another run or machine may answer differently:")
		for _, r := range d.Close {
			fmt.Fprintf(w, "- %s.\n", r)
		}
	}
	writeDeployment(w, in, m, d, dep)
	fmt.Fprintf(w, "\nThe classic decision tree (%s) picks %s.\n", ClassicTree, d.Classic)
	if len(d.Disagreements) > 0 {
		fmt.Fprintln(w, "Where these measurements disagree with the classic thresholds:")
		for _, r := range d.Disagreements {
			fmt.Fprintf(w, "- %s.\n", r)
		}
	}

	fmt.Fprintf(w, "\nMeasured on %s, with a full window on one key", where)
	if m.Measured < m.Records {
		fmt.Fprintf(
			w,
			" (the logs filled with %s of their %s records: memory scaled linearly, time measured at that size)",
			report.Int(m.Measured),
			report.Int(m.Records),
		)
	}
	switch m.Store {
	case "memory":
		fmt.Fprint(w, "; time is the store's time per call")
	case "postgres":
		fmt.Fprint(w, "; B/key is bytes on disk, the key's row copied into a temporary table laid out as ratewise.state; "+
			"time is a decision's statement as this process saw it, one at a time, its round trip included")
	default:
		fmt.Fprint(w, "; time is Redis's own time per EVALSHA (INFO commandstats), without the network round trip")
	}
	fmt.Fprintf(
		w,
		"; accuracy replayed on the in-memory store with a limit of %s per %s",
		report.Int(m.AccuracyLimit),
		report.Duration(in.Window),
	)
	var bursts []string
	for _, k := range cat.with(m.Figures) {
		if k.burst {
			bursts = append(bursts, k.name)
		}
	}
	if in.Burst > 0 && len(bursts) > 0 {
		fmt.Fprintf(w, ", %s with a burst of %s", report.AndList(bursts), report.Int(in.Burst))
		if m.AccuracyLimit < m.Records {
			fmt.Fprint(w, " scaled with the limit")
		}
	}
	fmt.Fprint(w, ":\n\n")
	t := &report.Table{
		Left:   1,
		Header: []string{"algorithm", "B/key", "for " + report.Int(in.Keys) + " keys", "time", "spread"},
	}
	for _, wl := range WorkloadNames {
		t.Header = append(t.Header, "× "+wl)
	}
	t.Header = append(t.Header, "false admits", "false denials")
	for _, k := range cat.with(m.Figures) {
		f := m.Figures[k.name]
		row := []string{k.name, Bytes(f.BytesPerKey), Bytes(f.TotalBytes(in.Keys)), report.Latency(f.Time.Median),
			report.Latency(f.Time.Min) + "–" + report.Latency(f.Time.Max)}
		for _, wl := range WorkloadNames {
			row = append(row, fmt.Sprintf("%.2f", f.Overshoot[wl]))
		}
		t.Add(append(row, report.Int(f.FalseAdmits), report.Int(f.FalseDenials))...)
	}
	t.Write(w, false)
	fmt.Fprintf(w, "time: median of %d samples of %d decisions, with the fastest and slowest sample. "+
		"× poisson, × boundary, × worst: the most admitted in any window over the limit, on Poisson arrivals at "+
		"1.2× the rate, "+
		"the window-boundary attack, and the sliding window counter's worst case (the limit at the end of one "+
		"sub-window and again when it drops out); "+
		"an exact limiter never exceeds 1.00. False admits and denials compare every decision with an exact "+
		"sliding log's.\n", timeSamples, timeBatch)
}

// period is the window's name in a rate: "1m", "calendar day" or
// "calendar month".
func (in Input) period() string {
	switch in.Calendar {
	case Day:
		return "calendar day"
	case Month:
		return "calendar month"
	}
	return report.Duration(in.Window)
}

// shareText is the rate per key in words: "0.05 per second (3 per 1m)",
// or "10 per calendar month" for a rate below 0.001 per second.
func (in Input) shareText() string {
	per := fmt.Sprintf("%s per %s", report.Int(in.Limit()), in.period())
	if in.QPS < 0.001 {
		return per
	}
	return fmt.Sprintf("%.6g per second (%s)", in.QPS, per)
}

// rateText says whether the question's rate is each key's or all keys'
// together, and what it makes of the other.
func rateText(in Input) string {
	total := in.QPS * float64(in.Keys)
	if in.TotalQPS > 0 {
		text := fmt.Sprintf("%s is the rate of all keys together, shared among %s: %s for each key",
			in.asked(), report.Keys(in.Keys), in.shareText())
		share := in.TotalQPS * in.Window.Seconds() / float64(in.Keys)
		if math.Abs(share-float64(in.Limit())) > 1e-3*share {
			text += fmt.Sprintf("; %.6g per %s rounded to a whole count, so %s decisions per second in all",
				share, in.period(), perSecond(total))
		}
		return text
	}
	if in.Keys == 1 {
		return fmt.Sprintf("%s is each key's rate, and with one key the total: %s decisions per second",
			in.asked(), perSecond(total))
	}
	return fmt.Sprintf("%s is each key's rate, not the total: %s at up to %.6g requests per second each make up "+
		"to %s decisions per second in all (--total-qps gives the rate of all keys together)",
		in.asked(), report.Keys(in.Keys), in.QPS, perSecond(total))
}

// checkInput says, when the question needs more than anyone runs (see
// MostDecisions), what it needs and which input made it, with the question
// it may have meant; "" when it does not.
func checkInput(in Input, dep Deployment) string {
	need := in.QPS * float64(in.Keys)
	decisions := perSecond(need) + " decisions per second at the limit"
	var beyond string
	if dep != nil {
		beyond = dep.beyond(need)
	}
	if need <= MostDecisions && beyond == "" {
		return ""
	}
	if need > MostDecisions {
		decisions += fmt.Sprintf(", more than %s, a rate only the largest services reach", report.Int(MostDecisions))
	}
	text := "this question needs " + decisions
	if beyond != "" {
		text += ", and " + beyond
	}
	text += ". "
	switch {
	case in.TotalQPS > 0:
		return text + fmt.Sprintf("%s is the rate of all keys together.", in.asked())
	case in.Keys == 1:
		return text + fmt.Sprintf("%s is the rate of the one key.", in.asked())
	}
	text += fmt.Sprintf("%s is per key: %.6g/s × %s keys = %s/s.",
		in.asked(), in.QPS, report.Int(in.Keys), perSecond(need))
	// The same figure as the rate of all keys, if that makes a question
	// that is not called into question itself.
	meant := in
	meant.Asked = "--total-qps " + strings.TrimPrefix(in.asked(), "--qps ")
	if in.QPS <= MostDecisions && meant.ShareTotal(in.QPS) == nil && meant.Validate() == nil {
		text += fmt.Sprintf(" Did you mean %s, %s for each key?", meant.Asked, meant.shareText())
	}
	return text
}

func writeDeployment(w io.Writer, in Input, m *Measurements, d Decision, dep Deployment) {
	need := in.QPS * float64(in.Keys)
	fmt.Fprintf(w, "\nCapacity: %s at up to %.6g requests per second each is %s decisions per second at the limit",
		report.Keys(in.Keys), in.QPS, perSecond(need))
	if dep != nil {
		dep.write(w, in, d, need)
		return
	}
	name := strings.Split(d.Answer(), " + ")[0]
	if f, ok := m.Figures[name]; ok && f.Time.Median > 0 {
		fmt.Fprintf(w, "; the in-memory store decides %s in %s, %s decisions per second on one core of one process. "+
			"What one Redis serves is measured on Redis: run without --memory-store where redis-server is installed, "+
			"or with --redis ADDR; "+
			"what a PostgreSQL database serves, with --postgres URL or --start-postgres.\n",
			name, report.Latency(f.Time.Median), perSecond(1/f.Time.Median.Seconds()))
	} else {
		fmt.Fprintln(w, ".")
	}
}

// masters is how many Redis masters serve need decisions per second at
// utilisation, each serving capacity.
func masters(need, capacity float64) int { return max(1, int(math.Ceil(need/(utilisation*capacity)))) }

// beyond says how many Redis masters the question needs, coalesced as the
// store is by default, when that is more than MostMasters.
func (c *Capacity) beyond(need float64) string {
	n := masters(need, c.Coalesced.Median)
	if n <= MostMasters {
		return ""
	}
	return fmt.Sprintf("%s Redis masters coalesced, where Redis Cluster is designed for up to 1,000 nodes "+
		"(%d masters with a replica each)", report.Int(int64(n)), MostMasters)
}

// write says how many Redis masters the question needs at utilisation.
func (c *Capacity) write(w io.Writer, in Input, d Decision, need float64) {
	masters := func(capacity float64) int { return masters(need, capacity) }
	mastersText := func(r Rate) string {
		lo, mid, hi := masters(r.Max), masters(r.Median), masters(r.Min)
		if lo == hi {
			return fmt.Sprintf("%d", mid)
		}
		return fmt.Sprintf("%d (%d–%d over the runs)", mid, lo, hi)
	}
	fmt.Fprintf(
		w,
		". One Redis process served %s at %s decisions per second of its CPU one decision per round trip (%s–%s "+
			"over 3 runs of %v), and %s coalesced (%s–%s; storeredis.WithCoalescing, on by default), "+
			"on 10,000 keys filling from empty: a busy key's decision costs Redis more, as the time column shows",
		c.Algorithm,
		perSecond(c.OneAtATime.Median),
		perSecond(c.OneAtATime.Min),
		perSecond(c.OneAtATime.Max),
		capacityRun,
		perSecond(c.Coalesced.Median),
		perSecond(c.Coalesced.Min),
		perSecond(c.Coalesced.Max),
	)
	if strings.Contains(d.Answer(), " + ") {
		fmt.Fprint(
			w,
			"; this is the set's first limit alone, and the set decides both in one round trip, at about the sum of their times",
		)
	}
	fmt.Fprintf(
		w,
		". At %.0f%% utilisation that is %s master(s) one at a time, %s coalesced",
		100*utilisation,
		mastersText(c.OneAtATime),
		mastersText(c.Coalesced),
	)
	if masters(c.Coalesced.Median) > 1 {
		fmt.Fprint(w, ": a Redis Cluster, whose keys spread over the masters by hash slot")
	}
	fmt.Fprintln(w, ".")
	switch share := in.QPS / c.OneAtATime.Median; {
	case share > utilisation:
		fmt.Fprintf(
			w,
			"Hot key: one key at %.6g requests per second is %.0f%% of what one Redis process serves one at a time, "+
				"and a key lives on one master whatever the cluster's size. "+
				"Split the key (for example per region or per app instance, each with its share of the limit) or limit "+
				"locally in front of Redis.\n",
			in.QPS,
			100*share,
		)
	case share > 0.1:
		fmt.Fprintf(
			w,
			"Hot key: one key at %.6g requests per second takes %.0f%% of one master by itself; every key lives on "+
				"one master.\n",
			in.QPS,
			100*share,
		)
	}
	fmt.Fprintln(
		w,
		"Requests beyond the limit are cheaper: a denial is remembered (storeredis.WithDenyCache, on by default), "+
			"and the same key's requests are answered from it without a round trip until it may be admitted "+
			"again.",
	)
}

// perSecond prints a rate to three significant figures with separators.
func perSecond(v float64) string {
	if v >= 1000 {
		p := math.Pow(10, math.Floor(math.Log10(v))-2)
		return report.Int(int64(math.Round(v/p) * p))
	}
	return fmt.Sprintf("%.3g", v)
}
