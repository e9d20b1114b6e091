// Package pgsql holds the PostgreSQL store's SQL and assembles it: the
// tables and the statements' helpers (schema.sql), and each algorithm's
// step as PL/pgSQL functions in the file named after its algorithms.Kind
// (<name>.sql), which ports the Redis store's Lua step (<name>.lua) and is
// held to the Go step by the differential tests.
//
// A kind's file defines two functions in schema ratewise (and may define
// helpers they share, such as compact_log_gone), all IMMUTABLE, which read
// nothing but their arguments and write nothing:
//
//	<name>_step(state bigint[], now bigint, cost bigint, slack bigint, p1 bigint, p2 bigint, p3 bigint,
//	    OUT allowed boolean, OUT remaining bigint, OUT retry bigint, OUT reset bigint, OUT at bigint,
//	    OUT new bigint[], OUT keep bigint, OUT delay bigint)
//	<name>_refund(state bigint[], now bigint, at bigint, cost bigint, p1 bigint, p2 bigint, p3 bigint,
//	    OUT new bigint[], OUT keep bigint)
//
// state is the key's state, NULL for none; now the decision time in µs
// since the Unix epoch; cost as in algorithms.Algorithm's Decide (0
// inspects, -n inspects as a request of cost n would be decided); slack the
// longest wait in µs a booking accepts (0 for a decision; only the bucket
// kinds book); p1…p3 the kind's parameters in the order of
// algorithms.Params: limit (or rate count), window (or period) in µs, then
// the burst or the sub-windows, NULL for those it does not take. The step
// returns the Result's fields in µs, the state to write (NULL to write
// nothing), how long after now the state must be kept, and a booking's
// wait. The refund gives back cost units charged at time at: the state to
// write (NULL when nothing changes) and, if it must be kept longer than an
// inspection's reset_after says, how long.
//
// A file names the files it needs on lines "-- requires: <file>.sql"; each
// is included once, before it. A kind's file that says "-- instance of:
// <file>.sql" gets that file's functions under its own name: the file is
// a template whose functions are named ratewise.__kind___step and
// ratewise.__kind___refund (internal/assemble).
package pgsql

import (
	"embed"
	"fmt"
	"strings"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/assemble"
)

//go:embed *.sql
var files embed.FS

// Schema returns the statements that create or update the schema: the
// tables and helpers, then every registered kind's step, or an error
// naming a kind whose file is missing.
// With unlogged, the tables of keys' states and of request IDs are created
// UNLOGGED.
func Schema(unlogged bool) (string, error) { return SchemaOf(algorithms.Kinds(), unlogged) }

// SchemaOf is Schema with the steps of kinds only.
func SchemaOf(kinds []*algorithms.Kind, unlogged bool) (string, error) {
	a := assemble.New(files)
	for _, file := range []string{"schema.sql", "ops.sql"} {
		if err := a.Include(file); err != nil {
			return "", err
		}
	}
	driver, err := files.ReadFile("drivers.sql")
	if err != nil {
		return "", err
	}
	for _, k := range kinds {
		if err := a.Include(k.String() + ".sql"); err != nil {
			return "", fmt.Errorf("pgsql: no step for %s: %w", k, err)
		}
		a.WriteString(instantiate(string(driver), k.String(), "_"))
	}
	src := a.String()
	if unlogged {
		src = strings.ReplaceAll(src, "CREATE /*UNLOGGED*/ TABLE", "CREATE UNLOGGED TABLE")
	}
	return src, nil
}

// upsert is the statement of one decision: one INSERT … ON CONFLICT DO
// UPDATE, which locks the key's row (or creates it), runs the kind's step
// on its state, writes what the step returned and the decision's result,
// and returns the result: {allowed, remaining, retry_after, reset_after, at,
// delay}. The step runs on the row as locked, at the server's clock read
// after the lock (or at :now, the caller's), so no decision is made on a
// stale state or time; a new row's VALUES run the step on no state. A step
// that writes nothing leaves the state and its expiry, and still writes the
// result, which is how the statement returns it: one new row version per
// decision, which a page's pruning reclaims. A row written with no state
// may be deleted at once.
//
// The parameters are :key, :now (NULL for the server's clock), :cost,
// :slack, :p1…:p3 (see the package doc) and :grace, how much longer than
// its step asks a state is kept.
const upsert = `INSERT INTO ratewise.state AS s (key, state, expires, res)
SELECT :key, d.new, CASE WHEN d.new IS NULL THEN n.clock ELSE n.clock + greatest(d.keep, 1) + :grace END,
  ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
FROM (SELECT ratewise.now_us() AS clock) n,
  ratewise.__kind___step(NULL, coalesce(:now, n.clock), :cost, :slack, :p1, :p2, :p3) d
WHERE true
ON CONFLICT (key) DO UPDATE SET (state, expires, res) = (
  SELECT coalesce(d.new, s.state),
    CASE WHEN d.new IS NULL THEN s.expires ELSE n.clock + greatest(d.keep, 1) + :grace END,
    ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
  FROM (SELECT ratewise.now_us() AS clock) n,
    ratewise.__kind___step(s.state, coalesce(:now, n.clock), :cost, :slack, :p1, :p2, :p3) d)
RETURNING res`

// upsertParams are upsert's parameters in the order of Decide's $n.
var upsertParams = []string{"key", "now", "cost", "slack", "p1", "p2", "p3", "grace"}

// Decision returns k's decision statement, whose parameters are $1 the key,
// $2 now (NULL for the server's clock), $3 the cost, $4 the slack, $5…$7
// the parameters and $8 the grace.
func Decision(k *algorithms.Kind) string {
	return instantiate(upsert, k.String(), "$")
}

// instantiate returns src for the kind named: __kind__ replaced by name,
// the upsert put in place of /*upsert*/, and its :parameters named with
// prefix: "$" numbers them, "_" names the function arguments of drivers.sql.
func instantiate(src, name, prefix string) string {
	src = strings.ReplaceAll(src, "/*upsert*/", upsert)
	for i, p := range upsertParams {
		to := prefix + p
		if prefix == "$" {
			to = fmt.Sprintf("$%d", i+1)
			if p == "now" {
				to += "::bigint" // NULL for the server's clock needs a type
			}
		}
		src = strings.ReplaceAll(src, ":"+p, to)
	}
	return strings.ReplaceAll(src, "__kind__", name)
}

// Step and Refund return the names of k's functions.
func Step(k *algorithms.Kind) string   { return "ratewise." + k.String() + "_step" }
func Refund(k *algorithms.Kind) string { return "ratewise." + k.String() + "_refund" }
