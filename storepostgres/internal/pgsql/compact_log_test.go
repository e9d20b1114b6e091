package pgsql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// compactPool returns a pool on the package's server with the compact
// log's functions created, whatever RATEWISE_PG_KINDS says.
func compactPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pgtest.Require(t)
	srv := pgtest.Shared(t)
	ctx := context.Background()
	p, err := pgxpool.New(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ddl, err := pgsql.SchemaOf([]*algorithms.Kind{algorithms.CompactLog{}.Kind()}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(ctx, ddl); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCompactLogInvalidStates holds that an array the step did not write
// reads as no state: every output is the one for NULL, and a refund
// changes nothing.
func TestCompactLogInvalidStates(t *testing.T) {
	p := compactPool(t)
	ctx := context.Background()
	const now = 1_000_000_000_000_000
	states := []string{
		"{}",
		"{{1,2},{3,4}}", // two dimensions
		"[0:1]={5,6}",   // not from 1
		"{NULL}",        // no latest
		"{1000000000000000,1000000000000000,NULL,1000000000000000}", // a NULL timestamp
		"{-1}",                                  // latest before the epoch
		"{4503599627370496}",                    // latest at 2^52
		"{9223372036854775807,1}",               // latest that would overflow
		"{1000000000000000,-1,5}",               // oldest before the epoch
		"{1000000000000000,5,1000000000000001}", // newest after latest
	}
	row := func(sql string, args ...any) string {
		t.Helper()
		var s string
		if err := p.QueryRow(ctx, sql, args...).Scan(&s); err != nil {
			t.Fatalf("%s %v: %v", sql, args, err)
		}
		return s
	}
	step := "SELECT r::text FROM ratewise.compact_log_step($1::text::bigint[], $2, $3, 0, 3, 1000000, NULL) r"
	refund := "SELECT r::text FROM ratewise.compact_log_refund($1::text::bigint[], $2, $3, 2, 3, 1000000, NULL) r"
	for _, st := range states {
		for _, cost := range []int64{-3, -2, 0, 1, 2, 3} {
			got, want := row(step, st, now, cost), row(step, nil, now, cost)
			if got != want {
				t.Errorf("step of %s, cost %d: %s, want %s as for no state", st, cost, got, want)
			}
		}
		for _, at := range []int64{now, 1, 5, 10} {
			if got := row(refund, st, now, at); got != "(,)" {
				t.Errorf("refund of %s at %d: %s, want nothing", st, at, got)
			}
		}
	}
}

// compactKept is the steps store of steps_test.go that also checks each
// key's keep as the PostgreSQL store applies it: once a decision's now is
// at or after the write time plus keep, when the store may have dropped the
// state, the state must decide exactly as no state does.
type compactKept struct {
	store.Store // nil: only Decide and Refund are called
	pool        *pgxpool.Pool
	states      map[string][]int64
	expires     map[string]int64 // µs
	checked     int
}

func (s *compactKept) step(
	ctx context.Context,
	state []int64,
	alg algorithms.Algorithm,
	now, cost int64,
) (f fields, next []int64, keep *int64, err error) {
	p1, p2, p3 := pgsql.Params(alg, time.Time{})
	var delay int64
	err = s.pool.QueryRow(ctx, "SELECT * FROM ratewise.compact_log_step($1, $2, $3, 0, $4, $5, $6)",
		state, now, cost, p1, p2, p3).
		Scan(&f.Allowed, &f.Remaining, &f.Retry, &f.Reset, &f.At, &next, &keep, &delay)
	if err == nil && delay != 0 {
		err = fmt.Errorf("delay %d", delay)
	}
	return f, next, keep, err
}

// decide runs a step on key's state, first checking that a state the store
// may have dropped decides as none, and returns its fields and keep.
func (s *compactKept) decide(
	ctx context.Context,
	key string,
	alg algorithms.Algorithm,
	now, cost int64,
	write bool,
) (fields, error) {
	f, next, keep, err := s.step(ctx, s.states[key], alg, now, cost)
	if err != nil {
		return f, err
	}
	if exp, ok := s.expires[key]; ok && now >= exp {
		g, _, _, err := s.step(ctx, nil, alg, now, cost)
		if err != nil {
			return f, err
		}
		if g != f {
			return f, fmt.Errorf("state %v kept until %d decides %+v at %d, no state %+v", s.states[key], exp, f, now, g)
		}
		s.checked++
	}
	if write && next != nil {
		if keep == nil || *keep < 0 {
			return f, fmt.Errorf("state %v written with keep %v", next, keep)
		}
		s.states[key], s.expires[key] = next, now+*keep
	}
	return f, nil
}

func (s *compactKept) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	f, err := s.decide(ctx, k.String(), alg, now.UnixMicro(), cost, true)
	if err != nil {
		return algorithms.Result{}, err
	}
	res, err := f.Result(algo.MaxCost(alg), 0)
	res.SetCharged(alg, cost)
	return res, err
}

// Refund runs the refund, then the inspection, and keeps a changed state as
// the store does: for the inspection's reset_after, until its at, and at
// least as long as the refund asks.
func (s *compactKept) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	key, us := k.String(), now.UnixMicro()
	p1, p2, p3 := pgsql.Params(alg, time.Time{})
	var next []int64
	var least *int64
	err := s.pool.QueryRow(ctx, "SELECT * FROM ratewise.compact_log_refund($1, $2, $3, $4, $5, $6, $7)",
		s.states[key], us, at.UnixMicro(), n, p1, p2, p3).Scan(&next, &least)
	if err != nil {
		return algorithms.Result{}, err
	}
	if next != nil {
		s.states[key] = next
	}
	f, err := s.decide(ctx, key, alg, us, 0, false)
	if err != nil {
		return algorithms.Result{}, err
	}
	if next != nil {
		keep := max(f.Reset, f.At-us)
		if least != nil {
			keep = max(keep, *least)
		}
		s.expires[key] = us + keep
	}
	return f.Result(algo.MaxCost(alg), 0)
}

func (s *compactKept) Reset(context.Context, store.Key, algorithms.Algorithm) error { return nil }

// TestCompactLogKept runs differential sequences other than
// TestStepsDifferential's through compactKept.
func TestCompactLogKept(t *testing.T) {
	s := &compactKept{pool: compactPool(t), states: map[string][]int64{}, expires: map[string]int64{}}
	k := algorithms.CompactLog{}.Kind()
	for seq := range uint64(sequences()) {
		rng := rand.New(rand.NewPCG(seq, 0xc0))
		difftest.Sequence(t, s, rng, difftest.Scope(rng, k), fmt.Sprintf("compact:%d", seq), false)
	}
	if s.checked == 0 {
		t.Fatal("no state outlived its keep")
	}
	t.Logf("%d decisions on a state past its keep", s.checked)
}
