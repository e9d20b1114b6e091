package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/replay"
)

var recommendSummary = "Recommends an algorithm for a rate, a window and a precision, and prints " +
	"the\nmeasurements behind every reason and every rejection: memory for a full window, the\nstore's " +
	"time per decision, accuracy on matching workloads, and what one Redis serves, or,\nwith " +
	"--postgres or --start-postgres when there is no Redis, the disk and decisions per\nsecond a " +
	"PostgreSQL deployment needs.\n\n" +
	"--qps is each key's rate and --total-qps the rate of all --keys together; the output\nsays which " +
	"it read and what it makes of the other. " +
	fmt.Sprintf(
		"A question that needs more than\nanyone runs (over %s decisions per second, over %d Redis masters, or "+
			"over\n%d times what one PostgreSQL database served) is called into question, with the\ninput "+
			"that made it.",
		report.Int(recommend.MostDecisions),
		recommend.MostMasters,
		recommend.MostPostgres,
	)

// question is recommend's flags that describe the question, as opposed to
// the store it is measured on.
type question struct {
	in                    recommend.Input
	qps, totalQPS, memory string
}

func (q *question) register(fs *command) {
	fs.StringVar(
		&q.qps,
		"qps",
		"",
		"the rate each key may reach, not the total: requests per second (0.5), or a count per period as the "+
			"library reads it (5/15m, 100/min, 10000/day, 10000/month); with --keys 100, --qps 5000 is 500,000 "+
			"per second in all. Give --qps or --total-qps",
	)
	fs.StringVar(
		&q.totalQPS,
		"total-qps",
		"",
		"the rate of all --keys together, shared evenly among them, written as --qps is; with --keys 100, "+
			"--total-qps 5000 is 50 per second for each key. Give --qps or --total-qps",
	)
	fs.DurationVar(
		&q.in.Window,
		"window",
		0,
		"the window the limit is counted over, such as 1m; defaults to the period of a --qps written as count/period",
	)
	fs.StringVar(&q.in.Precision, "precision", "", "exact or approx (required, except with --calendar)")
	fs.Int64Var(&q.in.Keys, "keys", 1, "keys active at once, each limited on its own")
	fs.Int64Var(
		&q.in.Burst,
		"burst",
		0,
		"the most requests a key may send at once, at most the window's limit; 0 means a whole window's limit",
	)
	fs.StringVar(
		&q.in.Calendar,
		"calendar",
		"",
		"day or month: a quota that resets at the start of each calendar day (UTC) or month, rather than counting any window",
	)
	fs.StringVar(
		&q.memory,
		"memory",
		"1GB",
		"memory budget for all keys' state, such as 512MB, 4GB or 1GiB (on PostgreSQL, the disk its table takes)",
	)
	fs.DurationVar(&q.in.LatencyBudget, "latency", time.Millisecond, "budget for the store's time per decision")
}

// input checks the parsed flags and returns the question.
func (q *question) input() (recommend.Input, error) {
	in := q.in
	var err error
	if in.MemoryBudget, err = parseBytes(q.memory); err != nil {
		return in, err
	}
	switch qps, total := strings.TrimSpace(q.qps), strings.TrimSpace(q.totalQPS); {
	case qps != "" && total != "":
		return in, usagef(
			"--qps %s and --total-qps %s: give one, --qps for each key's rate or --total-qps for all keys' together",
			qps,
			total,
		)
	case total != "":
		if err := parseQPS(&in, "--total-qps", total); err != nil {
			return in, err
		}
		in.Asked = "--total-qps " + total
		if err := in.ShareTotal(in.QPS); err != nil {
			return in, err
		}
	default:
		if err := parseQPS(&in, "--qps", qps); err != nil {
			return in, err
		}
		in.Asked = "--qps " + qps
	}
	return in, in.Validate()
}

// questionOf reads a question from recommend's command line, without the
// store flags.
func questionOf(args []string) (recommend.Input, error) {
	fs := newCommand("recommend", recommendSummary, io.Discard)
	var q question
	q.register(fs)
	if err := fs.parse(args); err != nil {
		return recommend.Input{}, err
	}
	return q.input()
}

func recommendCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommand("recommend", recommendSummary, stdout)
	var (
		q  question
		rf storeFlags
	)
	q.register(fs)
	rf.register(fs.FlagSet, "measure memory and latency", forRecommend)
	rf.conns = defaultConns
	if err := fs.parse(args); err != nil {
		return err
	}
	in, err := q.input()
	if err != nil {
		return err
	}
	target, where, err := rf.open(ctx)
	if err != nil {
		return err
	}
	defer target.Close()
	p := newProgress(stderr, isTerminal(stdout) && isTerminal(stderr))
	n := 0
	_, onRedis := target.(interface{ Client() redis.UniversalClient })
	_, onPostgres := target.(interface{ Pool() *pgxpool.Pool })
	// A step per algorithm measured, one for accuracy, one for capacity.
	steps := 1
	for _, k := range algorithms.Kinds() {
		if recommend.Measures(in, k) {
			steps++
		}
	}
	if onRedis || onPostgres {
		steps++
	}
	m, err := recommend.Measure(ctx, in, target, func(what string) { n++; p.step(n, steps, what) })
	if err != nil {
		p.finish()
		return err
	}
	d, err := recommend.Choose(in, m.Figures)
	if err != nil {
		p.finish()
		return err
	}
	var dep recommend.Deployment
	if onRedis || onPostgres {
		n++
		what := "capacity of one Redis"
		if onPostgres {
			what = "size of a PostgreSQL deployment"
		}
		p.step(n, steps, what)
		if dep, err = measureDeployment(ctx, in, d, target, onRedis); err != nil {
			p.finish()
			return err
		}
	}
	p.finish()
	recommend.Write(stdout, in, m, d, dep, where)
	return nil
}

// measureDeployment measures what a deployment of the recommended
// algorithm, or of the closest one when nothing fits, needs: one Redis's
// capacity, or a PostgreSQL database's disk and decisions per second.
func measureDeployment(
	ctx context.Context,
	in recommend.Input,
	d recommend.Decision,
	target replay.Target,
	onRedis bool,
) (recommend.Deployment, error) {
	alg, err := recommend.Configured(in, strings.Split(d.Answer(), " + ")[0])
	if err != nil {
		return nil, err
	}
	if onRedis {
		c, err := recommend.MeasureCapacity(ctx, target, alg)
		return &c, err
	}
	s, err := recommend.MeasurePostgres(ctx, target, alg)
	return &s, err
}

// parseQPS reads the rate of flag, --qps or --total-qps, into in.QPS: a
// number of requests per second, or a count per period as
// algorithms.ParseRate reads it, whose period is the window unless --window
// gives one. "N/month" is a calendar month's quota.
func parseQPS(in *recommend.Input, flag, s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return usagef(
			"--qps or --total-qps is required: each key's rate (--qps) or all keys' together (--total-qps), in " +
				"requests per second, such as 0.5, or a count per period, such as 5/15m",
		)
	}
	count, period, isRate := strings.Cut(s, "/")
	if !isRate {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return usagef("%s %q: want requests per second, such as 0.5, or a count per period, such as 5/15m", flag, s)
		}
		in.QPS = v
		if in.Window == 0 {
			switch in.Calendar {
			case recommend.Day:
				in.Window = 24 * time.Hour
			case recommend.Month:
				in.Window = recommend.MonthWindow
			}
		}
		return nil
	}
	var r algorithms.Rate
	switch strings.TrimSpace(period) {
	case "month", "months", "mo":
		n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
		if err != nil || n <= 0 {
			return usagef("%s %q: the count must be a positive whole number", flag, s)
		}
		r = algorithms.Rate{Count: n, Period: recommend.MonthWindow}
		if in.Calendar == "" {
			return usagef(
				"%s %q: a month has no fixed length; for a quota per calendar month, add --calendar month",
				flag,
				s,
			)
		}
	default:
		var err error
		if r, err = algorithms.ParseRate(s); err != nil {
			return usagef("%s: %v", flag, err)
		}
	}
	in.QPS = float64(r.Count) / r.Period.Seconds()
	if in.Window == 0 {
		in.Window = r.Period
	}
	return nil
}

// parseBytes reads a size such as 512MB, 4GB, 1GiB or 1000000, in any
// case: 512mb is 512MB.
func parseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		n      float64
	}{
		{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
		{"B", 1},
	}
	mult := 1.0
	num := strings.ToUpper(strings.TrimSpace(s))
	for _, u := range units {
		if v, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(v), u.n
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v*mult > 1<<62 {
		return 0, usagef("--memory %q: want a positive size such as 512MB, 4GB or 1GiB", s)
	}
	return int64(v * mult), nil
}
