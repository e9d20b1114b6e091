// Command ratewise helps choose a rate-limiting algorithm for a workload.
//
//	ratewise compare    replay workloads against every algorithm and print what each admitted and cost
//	ratewise recommend  recommend an algorithm for a rate, window and precision, with the measurements behind it
//	ratewise guide      regenerate docs/choosing.md and its charts (with -start-redis)
//
// With no flags, compare runs on an embedded default, the in-memory store
// and an in-process miniredis, and needs no server:
//
//	go run ./cmd/ratewise compare
//
// Every error prints one line and exits with status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

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
  recommend  recommend an algorithm for --qps, --window and --precision, with the measurements behind it
  guide      regenerate docs/choosing.md and its charts

Run 'ratewise <command> -h' for a command's flags.
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
	var err error
	switch args[0] {
	case "compare":
		err = compare(ctx, args[1:], stdout, stderr)
	case "recommend":
		err = recommendCmd(ctx, args[1:], stdout, stderr)
	case "guide":
		err = guide(ctx, args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		err = usagef("unknown command %q (known: compare, recommend, guide)", args[0])
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	// One line, whatever the error says.
	fmt.Fprintf(stderr, "ratewise %s: %s\n", args[0], strings.Join(strings.Fields(err.Error()), " "))
	return 2
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
			c.SetOutput(c.stdout)
			c.PrintDefaults()
			return err
		}
		return usagef("%v (run 'ratewise %s -h' for the flags)", err, c.Name())
	}
	if c.NArg() > 0 {
		return usagef("unexpected argument %q (run 'ratewise %s -h' for the flags)", c.Arg(0), c.Name())
	}
	return nil
}
