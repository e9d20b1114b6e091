package replay

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
)

// dialPostgres returns a target on the package's shared PostgreSQL.
func dialPostgres(t *testing.T) *Postgres {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.Shared(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	p, err := DialPostgres(context.Background(), cfg, "the test's PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// pgAlgorithms are the algorithms a PostgreSQL test runs: every one, or
// those named in RATEWISE_PG_KINDS, as in storepostgres's tests.
func pgAlgorithms() []string {
	if only := os.Getenv("RATEWISE_PG_KINDS"); only != "" {
		return strings.Split(only, ",")
	}
	return AlgorithmNames
}

// The same comparison on PostgreSQL: the decisions match the memory
// store's, each takes one statement (and the store's sweeps a few more),
// memory is measured on copies of the run's rows, and every run deletes
// its rows.
func TestPostgresTarget(t *testing.T) {
	w, err := workload.Builtin("boundary", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pg := dialPostgres(t)
	rep, err := Compare(ctx, Config{
		Workloads: []*workload.Workload{w}, Algorithms: pgAlgorithms(),
		Targets: []Target{Memory{}, pg},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		s := r.Stores[1]
		if s.Target != "postgres" {
			t.Fatalf("second store %q, want postgres", s.Target)
		}
		if s.RoundTripsPerDecision < 1 || s.RoundTripsPerDecision > 1.1 {
			t.Errorf(
				"%s: %.3f statements per decision, want 1 and the sweeps' few",
				r.Algorithm,
				s.RoundTripsPerDecision,
			)
		}
		if s.CommandsPerDecision != nil {
			t.Errorf("%s: commands per decision %v, want none counted", r.Algorithm, *s.CommandsPerDecision)
		}
		// The workload's one key, copied into at least minTableRows rows.
		if s.KeysHeld < minTableRows || s.BytesPerKey == nil {
			t.Fatalf(
				"%s: memory measured over %d rows (%v), want at least %d",
				r.Algorithm,
				s.KeysHeld,
				s.BytesPerKey,
				minTableRows,
			)
		}
		t.Logf(
			"%s: %.3f statements per decision, %.0f bytes per key over %d rows",
			r.Algorithm,
			s.RoundTripsPerDecision,
			*s.BytesPerKey,
			s.KeysHeld,
		)
		k, _ := algorithms.Lookup(r.Algorithm)
		if b := *s.BytesPerKey; algo.FamilyOf(k) != algo.FamilyLog && (b < 100 || b > 1000) {
			t.Errorf("%s: %.0f bytes per key, want a row's few hundred", r.Algorithm, b)
		}
	}
	var left int
	if err := pg.Pool().QueryRow(
		ctx, "SELECT count(*) FROM ratewise.state WHERE key LIKE $1", []byte("%:"+pg.prefix+"%"),
	).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d rows left behind by the runs", left)
	}
}

// A run's keys are its own: another run's rows, and another app's, are
// neither counted nor deleted.
func TestPostgresRunsKeepApart(t *testing.T) {
	ctx := context.Background()
	pg := dialPostgres(t)
	alg := algorithms.FixedWindow{Limit: 10, Window: 60_000_000_000}
	other, err := pg.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	run, err := pg.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := workload.Start
	for _, inst := range []Instance{other, other, run} {
		if _, err := inst.Store().Decide(ctx, store.Key{Name: "user:1"}, alg, now, 1); err != nil {
			t.Fatal(err)
		}
	}
	res, err := run.Store().Decide(ctx, store.Key{Name: "user:1"}, alg, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Remaining, int64(9); got != want {
		t.Errorf("the run's key has %d remaining, want %d: it saw another run's charges", got, want)
	}
	run.Close()
	res, err = other.Store().Decide(ctx, store.Key{Name: "user:1"}, alg, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Remaining, int64(8); got != want {
		t.Errorf("after the run closed, the other run's key has %d remaining, want %d", got, want)
	}
}

func TestUnreachablePostgres(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg, err := pgxpool.ParseConfig("postgres://nobody@" + addr + "/db?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DialPostgres(context.Background(), cfg, addr); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("DialPostgres(%s) with nothing listening: got %v, want store.ErrUnavailable", addr, err)
	}
}
