// Command ratewise helps choose a rate-limiting algorithm for a workload.
//
//	ratewise compare    replay workloads against every algorithm and print what each admitted and cost
//	ratewise recommend  recommend an algorithm for a rate, window and precision, with the measurements behind it
//	ratewise guide      regenerate docs/choosing.md and its charts
//	ratewise doctor     check that the Redis store runs as documented on a Redis, such as a managed one,
//	                    or the PostgreSQL store on a database
//	ratewise version    print ratewise's version, the revision it was built from and the Go version
//
// 'ratewise help <command>' or 'ratewise <command> help' prints a command's
// flags.
//
// By default compare, recommend and guide measure a real Redis: given none
// of --redis, --cluster, --start-redis, --postgres, --start-postgres,
// --memory-store and --miniredis, they start a throwaway redis-server of
// their own when one is on the PATH. Without one, compare runs the
// in-memory store and the embedded miniredis, and recommend measures the
// in-memory store, and each says so in its output. So neither needs a
// server:
//
//	go run ./cmd/ratewise compare
//
// compare and recommend measure the PostgreSQL store with --postgres URL,
// or with --start-postgres on a throwaway PostgreSQL of their own.
//
// Every error prints one line and exits with status 2. doctor exits with
// status 1 when a check fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// usageError is a mistake in the command line: a flag that does not parse
// or a value out of range. It exits with status 2, as do store failures.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

const usage = `usage: ratewise <command> [flags]

commands:
  compare    replay workloads against every algorithm; print what each admitted and cost
  recommend  recommend an algorithm for --qps (per key) or --total-qps, --window and --precision, with the
             measurements behind it
  guide      regenerate docs/choosing.md and its charts
  doctor     check a Redis, such as a managed one, or a PostgreSQL database for its store: what works, what to change
  version    print ratewise's version, the revision it was built from and the Go version

compare, recommend and guide measure a throwaway redis-server of their own
when redis-server is on the PATH, unless given --redis, --cluster,
--memory-store or --miniredis; without one, an in-process store, as their
output says. compare and recommend measure the PostgreSQL store with
--postgres URL, or --start-postgres for a throwaway server.

Run 'ratewise help <command>' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// quietLogger drops go-redis's own log lines, such as its retries to dial
// an unreachable server: the error that ends them is reported once, as one
// line.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// run runs the command line args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	redis.SetLogger(quietLogger{})
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch {
	case len(args) == 2 && isHelp(args[0]):
		// "ratewise help compare" is "ratewise compare --help".
		args = []string{args[1], "-h"}
	case len(args) == 2 && args[1] == "help":
		args = []string{args[0], "-h"}
	}
	var err error
	switch args[0] {
	case "compare":
		err = compare(ctx, args[1:], stdout, stderr)
	case "recommend":
		err = recommendCmd(ctx, args[1:], stdout, stderr)
	case "guide":
		err = guide(ctx, args[1:], stdout, stderr)
	case "doctor":
		err = doctor(ctx, args[1:], stdout)
	case "version":
		err = versionCmd(args[1:], stdout)
	default:
		if isHelp(args[0]) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		err = usagef("unknown command %q (known: compare, recommend, guide, doctor, version)", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errCheckFailed):
		return 1 // the report says which
	}
	// One line, whatever the error says.
	fmt.Fprintf(stderr, "ratewise %s: %s\n", args[0], oneLine(err.Error()))
	return 2
}

func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

// oneLine puts msg on one line, without the "ratewise: " that the
// library's errors start with: the line already starts "ratewise <command>:",
// and an error wrapped in context ("timing gcra on redis: ratewise: store
// unavailable") would say it twice.
func oneLine(msg string) string {
	msg = strings.Join(strings.Fields(msg), " ")
	for {
		trimmed := strings.TrimPrefix(msg, "ratewise: ")
		trimmed = strings.ReplaceAll(trimmed, ": ratewise: ", ": ")
		// The packages' sentinel errors name the package for a Go caller;
		// on the command line the message after them says it all.
		for _, sentinel := range []string{
			"recommend: invalid input: ", "workload: invalid parameter: ", "replay: invalid option: ",
		} {
			trimmed = strings.ReplaceAll(trimmed, sentinel, "")
		}
		if trimmed == msg {
			return msg
		}
		msg = trimmed
	}
}

func versionCmd(args []string, stdout io.Writer) error {
	fs := newCommand(
		"version",
		"Prints ratewise's module version, the VCS revision and commit time it was built from,\nand the Go version "+
			"that built it.",
		stdout,
	)
	if err := fs.parse(args); err != nil {
		return err
	}
	fmt.Fprint(stdout, version())
	return nil
}

// version describes the binary from its build information: the module
// version ("(devel)" for a build from a checkout), the revision and commit
// time when the build recorded them, and the Go version.
func version() string {
	v, revision, at, modified := "(devel)", "", "", false
	if info, ok := debug.ReadBuildInfo(); ok {
		if info.Main.Version != "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ratewise %s\n", v)
	switch {
	case revision == "":
		fmt.Fprintln(&b, "revision unknown")
	default:
		fmt.Fprintf(&b, "revision %s", revision)
		if at != "" {
			fmt.Fprintf(&b, ", committed %s", at)
		}
		if modified {
			fmt.Fprint(&b, ", with uncommitted changes")
		}
		fmt.Fprintln(&b)
	}
	fmt.Fprintf(&b, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return b.String()
}

// command is a subcommand's flags: parse errors come back as one line
// through run, and -h prints the usage to stdout.
type command struct {
	*flag.FlagSet
	summary string
	stdout  io.Writer
}

func newCommand(name, summary string, stdout io.Writer) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error too; parse prints
	// the usage only for -h.
	fs.Usage = func() {}
	return &command{FlagSet: fs, summary: summary, stdout: stdout}
}

// parse parses args, turning a parse error into a usageError.
func (c *command) parse(args []string) error {
	if err := c.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(c.stdout, "usage: ratewise %s [flags]\n\n%s\n\nflags:\n", c.Name(), c.summary)
			var b strings.Builder
			c.SetOutput(&b)
			c.PrintDefaults()
			// The flag package writes -name; ratewise writes --name
			// everywhere, and accepts both.
			io.WriteString(c.stdout, strings.ReplaceAll("\n"+b.String(), "\n  -", "\n  --")[1:])
			return err
		}
		return usagef("%s (run 'ratewise %s --help' for the flags)", c.explain(err), c.Name())
	}
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (run 'ratewise %s --help' for the flags)", c.Arg(0), c.Name())
	}
	return nil
}

// explain returns the flag package's parse error, which says only "parse
// error" of a duration without a unit, such as --time 5, rewritten for
// every duration flag to say what a duration looks like:
//
//	--time "5": want a duration with a unit, such as 500ms or 2s
//
// The flag package's message is "invalid value %q for flag -%s: %v"; any
// other is returned as it is, its -name written --name.
func (c *command) explain(err error) string {
	msg := err.Error()
	msg = flagName.ReplaceAllString(msg, "$1--$2")
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		return msg
	}
	value, qerr := strconv.QuotedPrefix(rest)
	if qerr != nil {
		return msg
	}
	rest, ok = strings.CutPrefix(rest[len(value):], " for flag --")
	if !ok {
		return msg
	}
	name, _, _ := strings.Cut(rest, ": ")
	fl := c.Lookup(name)
	if fl == nil {
		return msg
	}
	if g, ok := fl.Value.(flag.Getter); !ok || !isDuration(g.Get()) {
		return msg
	}
	return fmt.Sprintf("--%s %s: want a duration with a unit, such as 500ms or 2s", name, value)
}

// flagName finds a flag's name as the flag package writes it, -name, after
// ": " ("flag provided but not defined: -x") or "flag " ("for flag -x").
var flagName = regexp.MustCompile(`(: |flag )-([A-Za-z])`)

func isDuration(v any) bool {
	_, ok := v.(time.Duration)
	return ok
}
