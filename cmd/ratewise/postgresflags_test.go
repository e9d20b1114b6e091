package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// --postgres takes a URL or key=value settings, as pgx does; what the
// output shows of it has no password; the pool has room for the command's
// callers unless the URL sizes it, and a connection may take 2s unless the
// URL says.
func TestPostgresFlagTakesURLs(t *testing.T) {
	cfg, where, err := postgresConfig("postgres://ann:s3cret@db.example:6432/app?sslmode=require&connect_timeout=5", 30)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.ConnConfig
	if c.Host != "db.example" || c.Port != 6432 || c.Database != "app" || c.User != "ann" || c.Password != "s3cret" ||
		c.TLSConfig == nil ||
		c.ConnectTimeout != 5*time.Second ||
		cfg.MaxConns != 30 {
		t.Errorf("--postgres postgres://...: got %+v, %d connections", c, cfg.MaxConns)
	}
	if want := "postgres://ann:xxxxx@db.example:6432/app?sslmode=require&connect_timeout=5"; where != want {
		t.Errorf("--postgres postgres://... shows as %q, want %q", where, want)
	}
	cfg, where, err = postgresConfig(
		"host=db.example port=6432 dbname=app user=ann password=s3cret pool_max_conns=3",
		30,
	)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ConnConfig.Password != "s3cret" || cfg.MaxConns != 3 || cfg.ConnConfig.ConnectTimeout != defaultDialTimeout {
		t.Errorf("--postgres key=value: got %+v, %d connections", cfg.ConnConfig, cfg.MaxConns)
	}
	if want := "host=db.example port=6432 dbname=app user=ann"; where != want {
		t.Errorf("--postgres key=value shows as %q, want %q", where, want)
	}
	if cfg, _, err := postgresConfig("postgres://127.0.0.1/app", 0); err != nil || cfg.MaxConns != defaultConns {
		t.Errorf(
			"--postgres without pool_max_conns, for a command that gives no size: got %v connections, %v; want %d",
			cfg.MaxConns,
			err,
			defaultConns,
		)
	}
}

// compare and recommend run on a database given by URL, or on a throwaway
// server of their own, and say which.
func TestCompareOnPostgres(t *testing.T) {
	srv := pgtest.Shared(t)
	code, stdout, stderr := runCLI(t, append(quickCompare, "--postgres", srv.URL)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "Measured on: the in-memory store and the PostgreSQL at " + srv.URL + " (PostgreSQL "; !strings.HasPrefix(
		stdout,
		want,
	) {
		t.Errorf("stdout does not start %q:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "postgres B/key") || strings.Contains(stdout, "postgres cmds") {
		t.Errorf("no figures from PostgreSQL, or a commands column it has none for:\n%s", stdout)
	}

	code, stdout, stderr = runCLI(t, append(quickCompare, "--start-postgres")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if want := "Measured on: the in-memory store and a throwaway PostgreSQL started for this run " +
		"(PostgreSQL "; !strings.HasPrefix(first, want) {
		t.Errorf("first line %q does not start %q", first, want)
	}
}

// A database the command cannot use is one line, with no password: a
// database that does not exist, a server that does not answer.
func TestPostgresErrors(t *testing.T) {
	srv := pgtest.Shared(t)
	missing := strings.Replace(srv.URL, "ratewise@", "ratewise:hunter2@", 1)
	missing = strings.Replace(missing, "/ratewise?", "/nosuchdb?", 1)
	code, stdout, stderr := runCLI(t, append(quickCompare, "--postgres", missing)...)
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 ||
		!strings.Contains(stderr, "ratewise compare: store unavailable: postgres://ratewise:xxxxx@") ||
		!strings.Contains(stderr, `database "nosuchdb" does not exist`) ||
		strings.Contains(stderr, "hunter2") {
		t.Errorf("missing database: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// recommend on PostgreSQL measures every algorithm there, and sizes a
// deployment of the one it recommends: bytes per key at the table's fill
// factor, and the decisions per second the database served.
func TestRecommendSizesPostgres(t *testing.T) {
	code, stdout, stderr := runCLI(
		t,
		"recommend",
		"--qps",
		"100/min",
		"--precision",
		"approx",
		"--keys",
		"100000",
		"--start-postgres",
	)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Recommendation: ",
		"Measured on this PostgreSQL with ",
		"keys filled  decisions each  ratewise.state before",
		"fill factor\n",
		"70%\n",
		"callers    keys  decisions/s  range over 3 runs",
		"Disk: 100,000 keys at ",
		"Decisions: the peak is ",
		"Measured on a throwaway PostgreSQL started for this run (PostgreSQL ",
		"B/key is bytes on disk",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("recommend on PostgreSQL does not say %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "Redis process served") {
		t.Errorf("recommend on PostgreSQL sizes a Redis:\n%s", stdout)
	}
}
