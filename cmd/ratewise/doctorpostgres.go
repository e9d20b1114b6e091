package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/pgprobe"
)

// doctorPostgres checks the database at --postgres for the PostgreSQL
// store with pgprobe, as the role the URL names, and prints the findings.
func doctorPostgres(ctx context.Context, s string, stdout io.Writer) error {
	cfg, where, err := postgresConfig(s, 2)
	if err != nil {
		return err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // connects on first use: an unreachable server is a finding
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rep := pgprobe.Run(ctx, pool)

	writeWrapped(
		stdout,
		"",
		fmt.Sprintf("Checked the PostgreSQL at %s for ratewise's PostgreSQL store, as the role it connects as.", where),
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
		"The privileges are the role's: check with the URL your app connects with, as the role it connects as.",
	)
	fmt.Fprintln(stdout)
	return tally(stdout, rows)
}
