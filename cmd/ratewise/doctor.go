package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
)

const doctorSummary = `Checks that ratewise's Redis store runs as documented on the Redis given, such as a
managed one (ElastiCache, Memorystore, Upstash, Redis Cloud): the version, scripts (EVAL,
EVALSHA, TIME inside a script), cluster mode and hash tags, the round trip, persistence,
the eviction policy and the clock. Each check prints ok, warning or failure, with what
to change. The exit status is 1 when a check fails; warnings alone leave it 0.

The doctor connects with the client settings docs/redis.md recommends for --budget,
whatever a URL says of timeouts, so its client-settings check is about its own client.
Your app's client is another: storeredis.CheckClient(rdb, budget) checks its settings,
and storeredis.New logs what it finds by default.

With --postgres URL it checks a database for ratewise's PostgreSQL store instead, as the
role the URL names: the server's version (14 or later), the schema ratewise (absent, at
this version or another) and the role's privileges to create or use it, with the GRANTs
that fix what it lacks. Give it the URL your app connects with, to check your app's role.`

// errCheckFailed is doctor's outcome when a check failed: the report says
// which, and the exit status is 1.
var errCheckFailed = errors.New("a check failed")

func doctor(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newCommand("doctor", doctorSummary, stdout)
	var addr, cluster, postgres string
	fs.StringVar(
		&addr,
		"redis",
		"",
		"check the Redis at this address: host:port, or a URL such as redis://user:password@host:6379/0 (rediss:// for TLS)",
	)
	fs.StringVar(
		&cluster,
		"cluster",
		"",
		"check the Redis Cluster with these comma-separated seed addresses (host:port), or at a URL such as "+
			"redis://user:password@host:6379?addr=host2:6379",
	)
	fs.StringVar(
		&postgres,
		"postgres",
		"",
		"check the database at this URL for the PostgreSQL store, as the role it names: "+
			"postgres://user:password@host:5432/db (or key=value settings, as pgx takes them)",
	)
	budget := fs.Duration(
		"budget",
		100*time.Millisecond,
		"the longest a request may wait for a decision; the doctor's client settings and the round-trip check "+
			"follow it (Redis only)",
	)
	if err := fs.parse(args); err != nil {
		return err
	}
	if postgres != "" {
		for _, other := range []struct{ name, value string }{{"redis", addr}, {"cluster", cluster}} {
			if other.value != "" {
				return usagef("--%s and --postgres: give only one", other.name)
			}
		}
		budgetSet := false
		fs.Visit(func(fl *flag.Flag) { budgetSet = budgetSet || fl.Name == "budget" })
		if budgetSet {
			return usagef("--budget is for --redis and --cluster; the PostgreSQL checks take none")
		}
		return doctorPostgres(ctx, postgres, stdout)
	}
	if *budget <= 0 {
		return usagef("--budget must be > 0, got %v", *budget)
	}
	client, where, err := doctorClient(addr, cluster, *budget)
	if err != nil {
		return err
	}
	defer client.Close()

	rep := redisprobe.Run(ctx, client, *budget)
	for i, f := range rep.Findings {
		if f.Check == "client settings" {
			rep.Findings[i].Found = "the doctor's own client, not your app's (see below): " + f.Found
		}
	}
	writeWrapped(
		stdout,
		"",
		fmt.Sprintf("Checked %s for ratewise's Redis store, with a budget of %v per decision.", where, *budget),
	)
	fmt.Fprintln(stdout)
	var rows []finding
	for _, f := range rep.Findings {
		rows = append(rows, finding{f.Check, f.Status.String(), f.Found, f.Change})
	}
	writeReport(stdout, rows)
	fmt.Fprintln(stdout)
	writeWrapped(
		stdout,
		"",
		fmt.Sprintf("The doctor's client: %s, the settings docs/redis.md recommends for a budget of %v. "+
			"The client-settings check is about this client, not your app's: check your app's own client with "+
			"storeredis.CheckClient(rdb, budget), which storeredis.New runs and logs by default.",
			describeSettings(*budget), *budget),
	)
	fmt.Fprintln(stdout)
	return tally(stdout, rows)
}

// finding is one row of the doctor's report, from either probe.
type finding struct{ check, status, found, change string }

// tally prints how many rows failed and warned, and returns errCheckFailed
// if any failed.
func tally(w io.Writer, rows []finding) error {
	var failures, warnings int
	for _, f := range rows {
		switch f.status { // as both probes' Status prints them
		case "failure":
			failures++
		case "warning":
			warnings++
		}
	}
	fmt.Fprintf(w, "%s, %s.\n", count(failures, "failure"), count(warnings, "warning"))
	if failures > 0 {
		return errCheckFailed
	}
	return nil
}

// doctorClient builds the client for --redis or --cluster, exactly one of
// which must be given, with the settings docs/redis.md recommends for
// budget, and says what it reaches.
func doctorClient(addr, cluster string, budget time.Duration) (redis.UniversalClient, string, error) {
	switch {
	case addr != "" && cluster != "":
		return nil, "", usagef("--redis and --cluster: give only one")
	case addr != "":
		opts, where, err := redisOptions(addr)
		if err != nil {
			return nil, "", err
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.DialerRetries, opts.DialerRetryTimeout = budget*3/10, 1, budget/10
		opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = budget/2, budget/2, budget/2
		opts.MaxRetries = -1
		return redis.NewClient(opts), "the Redis at " + where, nil
	case cluster != "":
		opts, where, err := clusterOptions(cluster)
		if err != nil {
			return nil, "", err
		}
		opts.ContextTimeoutEnabled = true
		opts.DialTimeout, opts.DialerRetries, opts.DialerRetryTimeout = budget*3/10, 1, budget/10
		opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = budget/2, budget/2, budget/2
		opts.MaxRetries = -1
		opts.ClusterStateReloadInterval = time.Second
		return redis.NewClusterClient(opts), "the Redis Cluster at " + where, nil
	}
	return nil, "", usagef("give --redis, --cluster or --postgres: the store to check")
}

// describeSettings says what doctorClient sets, for the output.
func describeSettings(budget time.Duration) string {
	return fmt.Sprintf(
		"ContextTimeoutEnabled true, DialTimeout %v, DialerRetries 1, DialerRetryTimeout %v, ReadTimeout, "+
			"WriteTimeout and PoolTimeout %v, "+
			"MaxRetries -1 (and for a cluster ClusterStateReloadInterval 1s)",
		budget*3/10,
		budget/10,
		budget/2,
	)
}

// doctorWidth is the width the report is wrapped to.
const doctorWidth = 100

// writeReport prints rows as a table: the check, its status, and what was
// found with what to change under it, wrapped to doctorWidth.
func writeReport(w io.Writer, rows []finding) {
	checkWidth, statusWidth := len("check"), len("status")
	for _, f := range rows {
		checkWidth = max(checkWidth, utf8.RuneCountInString(f.check))
		statusWidth = max(statusWidth, len(f.status))
	}
	row := func(check, status, text string) string {
		return fmt.Sprintf("%-*s  %-*s  %s", checkWidth, check, statusWidth, status, text)
	}
	fmt.Fprintln(w, strings.TrimRight(row("check", "status", "found, and what to change"), " "))
	indent := strings.Repeat(" ", checkWidth+statusWidth+4)
	for _, f := range rows {
		lines := wrap(f.found, doctorWidth-len(indent))
		if f.change != "" {
			lines = append(lines, wrap("change: "+f.change, doctorWidth-len(indent))...)
		}
		fmt.Fprintln(w, row(f.check, f.status, lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintln(w, indent+l)
		}
	}
}

// writeWrapped writes text after prefix, wrapped to doctorWidth.
func writeWrapped(w io.Writer, prefix, text string) {
	for i, l := range wrap(text, doctorWidth-len(prefix)) {
		if i > 0 {
			prefix = strings.Repeat(" ", len(prefix))
		}
		fmt.Fprintln(w, prefix+l)
	}
}

// wrap splits text into lines of at most width runes, at spaces; a longer
// word has a line of its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// count is "1 failure", "2 warnings", "no failure".
func count(n int, noun string) string {
	switch n {
	case 0:
		return "no " + noun
	case 1:
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
