package pgsql_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// pool returns a pool on the package's server, with the schema created.
func pool(t *testing.T) (*pgxpool.Pool, []*algorithms.Kind) {
	t.Helper()
	pgtest.Require(t)
	srv := pgtest.Shared(t)
	ctx := context.Background()
	p, err := pgxpool.New(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	// While kinds are being ported, the test runs those whose file exists:
	// RATEWISE_PG_KINDS=fixed_window,gcra.
	kinds := algorithms.Kinds()
	if only := os.Getenv("RATEWISE_PG_KINDS"); only != "" {
		kinds = nil
		for _, name := range strings.Split(only, ",") {
			k, err := algorithms.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, k)
		}
	}
	ddl, err := pgsql.SchemaOf(kinds, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	return p, kinds
}

// steps is a store made of the step functions alone, with states kept in
// Go: what the differential tests hold to the Go steps, apart from any
// table or statement.
type steps struct {
	store.Store // nil: only Decide and Refund are called
	pool        *pgxpool.Pool
	states      map[string][]int64
}

// step runs the kind's step on key's state, keeps what it writes, and
// returns its Result under alg's limit.
func (s *steps) step(
	ctx context.Context,
	key string,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	p1, p2, p3 := pgsql.Params(alg, now)
	var allowed bool
	var remaining, retry, reset, at, keep, delay int64
	var next []int64
	err := s.pool.QueryRow(ctx, "SELECT * FROM "+pgsql.Step(alg.Kind())+"($1, $2, $3, 0, $4, $5, $6)",
		s.states[key], now.UnixMicro(), cost, p1, p2, p3).
		Scan(&allowed, &remaining, &retry, &reset, &at, &next, &keep, &delay)
	if err != nil {
		return algorithms.Result{}, err
	}
	if next != nil {
		s.states[key] = next
	}
	a := int64(0)
	if allowed {
		a = 1
	}
	return storecheck.Result([5]int64{a, remaining, retry, reset, at}, algo.MaxCost(alg), 0)
}

func (s *steps) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	res, err := s.step(ctx, k.String(), alg, now, cost)
	res.SetCharged(alg, cost)
	return res, err
}

// Refund runs the refund, then an inspection, which writes nothing.
func (s *steps) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	p1, p2, p3 := pgsql.Params(alg, now)
	var next []int64
	var keep *int64
	err := s.pool.QueryRow(ctx, "SELECT * FROM "+pgsql.Refund(alg.Kind())+"($1, $2, $3, $4, $5, $6, $7)",
		s.states[k.String()], now.UnixMicro(), at.UnixMicro(), n, p1, p2, p3).Scan(&next, &keep)
	if err != nil {
		return algorithms.Result{}, err
	}
	if next != nil {
		s.states[k.String()] = next
	}
	saved := s.states[k.String()]
	res, err := s.step(ctx, k.String(), alg, now, 0)
	s.states[k.String()] = saved
	return res, err
}

func (s *steps) Reset(context.Context, store.Key, algorithms.Algorithm) error { return nil }

// TestStepsDifferential holds every kind's SQL step and refund to the Go
// steps on 10,000 random steps (difftest), field by field.
func TestStepsDifferential(t *testing.T) {
	p, kinds := pool(t)
	s := &steps{pool: p, states: map[string][]int64{}}
	difftest.Run(t, s, kinds, sequences(), "steps", false)
}

func sequences() int {
	if testing.Short() {
		return difftest.Sequences / 4
	}
	return difftest.Sequences
}

// fields are a step's Result in µs, as a step returns them.
type fields struct {
	Allowed                     bool
	Remaining, Retry, Reset, At int64
}

// Result checks f under limit, decided no earlier than notBefore µs, as a
// store does (storecheck.Result).
func (f fields) Result(limit, notBefore int64) (algorithms.Result, error) {
	a := int64(0)
	if f.Allowed {
		a = 1
	}
	return storecheck.Result([5]int64{a, f.Remaining, f.Retry, f.Reset, f.At}, limit, notBefore)
}
