package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/replay"
)

func recommendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("recommend", "Recommends an algorithm for a rate, a window and a precision, and prints the\nmeasurements behind every reason: memory for QPS×window records, decision latency at\nthat size, and accuracy on a matching workload, measured on this machine.", stdout)
	var (
		in     recommend.Input
		memory string
		rf     redisFlags
	)
	fs.Float64Var(&in.QPS, "qps", 0, "requests per second each key may make (required)")
	fs.DurationVar(&in.Window, "window", 0, "the window the limit is counted over, such as 1m (required)")
	fs.StringVar(&in.Precision, "precision", "", "exact or approx (required)")
	fs.Int64Var(&in.Keys, "keys", 1, "keys active at once")
	fs.Int64Var(&in.Burst, "burst", 0, "the most requests a key may send at once; 0 means a whole window's limit")
	fs.StringVar(&memory, "memory", "1GB", "memory budget for all keys' state, such as 512MB or 4GB")
	fs.DurationVar(&in.LatencyBudget, "latency", time.Millisecond, "budget for a decision's p99 latency")
	rf.register(fs.FlagSet, "measure memory and latency (instead of on the memory store)")
	if err := fs.parse(args); err != nil {
		return err
	}
	var err error
	if in.MemoryBudget, err = parseBytes(memory); err != nil {
		return err
	}
	if err := in.Validate(); err != nil {
		return err
	}
	target, err := rf.open(ctx)
	if err != nil {
		return err
	}
	if target == nil {
		target = replay.Memory{}
	}
	defer target.Close()
	p := newProgress(stderr, isTerminal(stdout) && isTerminal(stderr))
	n := 0
	m, err := recommend.Measure(ctx, in, target, func(what string) { n++; p.step(n, len(replay.AlgorithmNames)+1, what) })
	p.finish()
	if err != nil {
		return err
	}
	d, err := recommend.Decide(in, m.Figures)
	if err != nil {
		return err
	}
	writeRecommendation(stdout, in, m, d)
	return nil
}

func writeRecommendation(w io.Writer, in recommend.Input, m *recommend.Measurements, d recommend.Decision) {
	fmt.Fprintf(w, "Recommendation: %s, for %s requests per %s per key (QPS %g), %s, %s key(s)",
		d.Algorithm, report.Int(in.Limit()), report.Duration(in.Window), in.QPS, in.Precision, report.Int(in.Keys))
	if in.Burst > 0 {
		fmt.Fprintf(w, ", bursts of %s", report.Int(in.Burst))
	}
	fmt.Fprint(w, "\n\n")
	fmt.Fprintln(w, "Why:")
	for _, r := range d.Reasons {
		fmt.Fprintf(w, "- %s.\n", r)
	}
	fmt.Fprintf(w, "\nThe classic decision tree (%s) picks %s.\n", recommend.ClassicTree, d.Classic)
	if len(d.Disagreements) > 0 {
		fmt.Fprintln(w, "Where this machine's measurements disagree with the classic thresholds:")
		for _, r := range d.Disagreements {
			fmt.Fprintf(w, "- %s.\n", r)
		}
	}
	store := m.Figures["gcra"].Store
	fmt.Fprintf(w, "\nMeasured on %s with a full window on one key", store)
	if store == "memory" {
		fmt.Fprint(w, " (the in-memory store's Go heap; -start-redis or -redis ADDR measures a real Redis)")
	}
	if m.Measured < m.Records {
		fmt.Fprintf(w, " (the sliding log filled with %s of its %s records: its memory scaled linearly, its latency measured at that size)", report.Int(m.Measured), report.Int(m.Records))
	}
	fmt.Fprintf(w, "; accuracy on %s with a limit of %s per %s, each algorithm configured as in compare",
		strings.Join(m.Workloads, " and "), report.Int(m.AccuracyLimit), report.Duration(in.Window))
	if in.Burst > 0 {
		fmt.Fprintf(w, ", the token bucket and GCRA with a burst of %s", report.Int(in.Burst))
		if m.AccuracyLimit < m.Records {
			fmt.Fprint(w, " scaled with the limit")
		}
	}
	fmt.Fprint(w, ":\n\n")
	t := &report.Table{Left: 1, Header: []string{"algorithm", "B/key", "for " + report.Int(in.Keys) + " keys", "p50", "p99"}}
	for _, wl := range m.Workloads {
		t.Header = append(t.Header, "× limit "+wl)
	}
	t.Header = append(t.Header, "false admits", "false denials")
	for _, name := range replay.AlgorithmNames {
		f := m.Figures[name]
		row := []string{name, recommend.Bytes(f.BytesPerKey), recommend.Bytes(f.TotalBytes(in.Keys)), report.Latency(f.P50), report.Latency(f.P99)}
		for _, wl := range m.Workloads {
			row = append(row, fmt.Sprintf("%.2f", f.Overshoot[wl]))
		}
		t.Add(append(row, report.Int(f.FalseAdmits), report.Int(f.FalseDenials))...)
	}
	t.Write(w, false)
}

// parseBytes reads a size such as 512MB, 4GB, 1GiB or 1000000.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		n      float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	num := strings.TrimSpace(s)
	for _, u := range units {
		if v, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(v), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v*mult > 1<<62 {
		return 0, usagef("-memory %q: want a positive size such as 512MB or 4GB", s)
	}
	return int64(v * mult), nil
}
