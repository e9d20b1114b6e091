// Package pgsql holds the PostgreSQL store's SQL and assembles it: the
// tables and the statements' helpers (schema.sql), and each algorithm's
// step as PL/pgSQL functions in the file named after its algorithms.Kind
// (<name>.sql), which ports the Redis store's Lua step (<name>.lua) and is
// held to the Go step by the differential tests.
//
// A kind's file defines two functions in schema ratewise, both IMMUTABLE,
// which read nothing but their arguments and write nothing:
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
// is included once, before it.
package pgsql

import (
	"embed"
	"fmt"
	"strings"

	"github.com/ratewise/ratewise/algorithms"
)

//go:embed *.sql
var files embed.FS

// Version is the version of the schema this package creates. A database
// whose schema has another version is migrated by Schema's statements,
// which replace every function.
const Version = 1

// Schema returns the statements that create or update the schema: the
// tables and helpers, then every registered kind's step, or an error
// naming a kind whose file is missing.
func Schema() (string, error) { return SchemaOf(algorithms.Kinds()) }

// SchemaOf is Schema with the steps of kinds only.
func SchemaOf(kinds []*algorithms.Kind) (string, error) {
	var a assembler
	if err := a.include("schema.sql"); err != nil {
		return "", err
	}
	for _, k := range kinds {
		if err := a.include(k.Name() + ".sql"); err != nil {
			return "", fmt.Errorf("pgsql: no step for %s: %w", k, err)
		}
	}
	return a.src.String(), nil
}

// Step and Refund return the names of k's functions.
func Step(k *algorithms.Kind) string   { return "ratewise." + k.Name() + "_step" }
func Refund(k *algorithms.Kind) string { return "ratewise." + k.Name() + "_refund" }

// assembler concatenates files, each after those it requires.
type assembler struct {
	src  strings.Builder
	seen map[string]bool
}

func (a *assembler) include(file string) error {
	if a.seen == nil {
		a.seen = map[string]bool{}
	}
	if a.seen[file] {
		return nil
	}
	a.seen[file] = true
	b, err := files.ReadFile(file)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if dep, ok := strings.CutPrefix(line, "-- requires: "); ok {
			if err := a.include(strings.TrimSpace(dep)); err != nil {
				return err
			}
		}
	}
	a.src.Write(b)
	a.src.WriteString("\n")
	return nil
}
