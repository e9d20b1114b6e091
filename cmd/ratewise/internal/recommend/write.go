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
}

// Write prints the recommendation, its reasons and rejections, the
// capacity it needs, and the measurements behind it. where describes the
// store the costs were measured on; dep is nil when they were measured on
// the in-memory store.
func Write(w io.Writer, in Input, m *Measurements, d Decision, dep Deployment, where string) {
	registry.write(w, in, m, d, dep, where)
}

func (cat catalog) write(w io.Writer, in Input, m *Measurements, d Decision, dep Deployment, where string) {
	fmt.Fprintf(w, "%s\n\n    %s\n\n", Headline(in, d), d.Config)
	fmt.Fprintln(w, "Why:")
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

// write says how many Redis masters the question needs at utilisation.
func (c *Capacity) write(w io.Writer, in Input, d Decision, need float64) {
	masters := func(capacity float64) int { return max(1, int(math.Ceil(need/(utilisation*capacity)))) }
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
