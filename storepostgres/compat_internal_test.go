package storepostgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/pgschema"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// schema4 holds the statements a store of schema version 4 sends, for
// GCRA, as that version's code wrote them: a rolling deploy runs them
// against this schema while the newer instances serve. Kept as they were,
// whatever this version's own statements become.
var schema4 = struct{ decide, once, batch, lease, give, set, reset string }{
	decide: `INSERT INTO ratewise.state AS s (key, state, expires, res)
SELECT $1, d.new, CASE WHEN d.new IS NULL THEN n.clock ELSE n.clock + greatest(d.keep, 1) + $8 END,
  ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
FROM (SELECT ratewise.now_us() AS clock) n,
  ratewise.gcra_step(NULL, coalesce($2::bigint, n.clock), $3, $4, $5, $6, $7) d
WHERE true
ON CONFLICT (key) DO UPDATE SET (state, expires, res) = (
  SELECT coalesce(d.new, s.state),
    CASE WHEN d.new IS NULL THEN s.expires ELSE n.clock + greatest(d.keep, 1) + $8 END,
    ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
  FROM (SELECT ratewise.now_us() AS clock) n,
    ratewise.gcra_step(s.state, coalesce($2::bigint, n.clock), $3, $4, $5, $6, $7) d)
RETURNING res`,
	once:  "SELECT ratewise.gcra_once($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0)",
	batch: "SELECT ratewise.gcra_batch($1, $2, $3, $4, $5, $6, $7)",
	lease: "SELECT ratewise.gcra_lease($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 0)",
	give:  "SELECT ratewise.gcra_give($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
	set:   "SELECT ratewise.decide_set($1, $2, $3, $4, $5, $6, $7, $8, 0, $9)",
	reset: "SELECT ratewise.reset($1, $2, $3, 0)",
}

// onceKey4 is schema 4's spelling of a once row: the state's key, the
// kind and the ID.
func onceKey4(rkey []byte, kind, id string) []byte {
	return append(append(append([]byte{}, rkey...), kind...), id...)
}

// TestPreviousSchemasStatements runs schema 4's statements against this
// schema on one key, and this store's calls on another, step for step: a
// decision, one with a request ID and its retry, a batch, a lease, a reset
// that puts its mark back, a refund and a set's decision. Each gets the
// same Result on both keys: an older instance of a rolling deploy keeps
// deciding as the newer ones do.
func TestPreviousSchemasStatements(t *testing.T) {
	ctx := context.Background()
	pool := sharedPool(t)
	s := New(pool, WithClientTime(), WithCoalescing(0))
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(5), Burst: 5}
	other := algorithms.FixedWindow{Limit: 10, Window: time.Minute}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	us := now.UnixMicro()
	prefix := fmt.Sprint("compat-", time.Now().UnixNano(), "-")
	old, cur := store.Key{Name: prefix + "old"}, store.Key{Name: prefix + "new"}
	rold := key(old, alg)
	p1, p2, p3 := pgsql.Params(alg, time.Time{})
	limit := algo.MaxCost(alg)
	grace := s.grace

	// old runs a schema 4 statement that returns a decision's reply.
	oldReply := func(what string, cost int64, sql string, once bool, args ...any) algorithms.Result {
		t.Helper()
		var reply []int64
		if err := pool.QueryRow(ctx, sql, args...).Scan(&reply); err != nil {
			t.Fatalf("%s, schema 4's statement: %v", what, err)
		}
		res, _, err := decisionResult(reply, alg, cost, once, 0)
		if err != nil {
			t.Fatalf("%s, schema 4's reply %v: %v", what, reply, err)
		}
		return res
	}
	same := func(what string, got algorithms.Result, want algorithms.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s, this store: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s: schema 4's statement gave %+v, this store %+v", what, got, want)
		}
	}

	res, err := s.Decide(ctx, cur, alg, now, 1)
	same(
		"a decision",
		oldReply("a decision", 1, schema4.decide, false, rold, us, int64(1), int64(0), p1, p2, p3, grace),
		res,
		err,
	)

	id := ratewise.WithRequestID(ctx, "compat-id")
	for _, what := range []string{"a decision with a request ID", "its retry"} {
		res, err := s.Decide(id, cur, alg, now, 1)
		same(
			what,
			oldReply(
				what,
				1,
				schema4.once,
				true,
				rold,
				onceKey4(rold, ":once:", "compat-id"),
				us,
				int64(1),
				int64(0),
				p1,
				p2,
				p3,
				grace,
				limit,
			),
			res,
			err,
		)
	}

	var batch []int64
	if err := pool.QueryRow(ctx, schema4.batch, [][]byte{rold, rold}, []int64{us, us}, []int64{1, 0},
		[]int64{p1, p1}, []int64{p2, p2}, []*int64{p3, p3}, grace).Scan(&batch); err != nil || len(batch) != 12 {
		t.Fatalf("schema 4's batch: %v, %v", batch, err)
	}
	ds := []*decision{
		{key: key(cur, alg), alg: alg, now: &us, cost: 1},
		{key: key(cur, alg), alg: alg, now: &us, cost: 0},
	}
	s.sendBatch(ctx, ds)
	for i, d := range ds {
		want, _, err := decisionResult(batch[6*i:6*i+6], alg, d.cost, false, 0)
		if err != nil || d.err != nil {
			t.Fatalf("batch decision %d: %v, %v", i, err, d.err)
		}
		got, _, err := decisionResult(d.reply, alg, d.cost, false, 0)
		same(fmt.Sprint("batch decision ", i), want, got, err)
	}

	res, _, err = s.Lease(ctx, cur, alg, now, 2, time.Second)
	same(
		"a lease",
		oldReply(
			"a lease",
			2,
			schema4.lease,
			false,
			rold,
			markKey(rold),
			nil,
			us,
			int64(2),
			time.Second.Microseconds(),
			p1,
			p2,
			p3,
			grace,
			limit,
		),
		res,
		err,
	)
	res, err = s.Decide(ctx, cur, alg, now, 1)
	same(
		"a decision after the lease",
		oldReply(
			"a decision after the lease",
			1,
			schema4.decide,
			false,
			rold,
			us,
			int64(1),
			int64(0),
			p1,
			p2,
			p3,
			grace,
		),
		res,
		err,
	)

	var applied bool
	if err := pool.QueryRow(ctx, schema4.reset, rold, markKey(rold), nil).Scan(&applied); err != nil || !applied {
		t.Fatalf("schema 4's reset: %v, %v", applied, err)
	}
	if err := s.Reset(ctx, cur, alg); err != nil {
		t.Fatal(err)
	}
	res, err = s.Decide(ctx, cur, alg, now, 0)
	same(
		"a peek after the reset",
		oldReply("a peek after the reset", 0, schema4.decide, false, rold, us, int64(0), int64(0), p1, p2, p3, grace),
		res,
		err,
	)

	var give []int64
	if err := pool.QueryRow(ctx, schema4.give, rold, us, us, int64(1), p1, p2, p3, grace, nil, nil, limit,
		algo.QuotaOf(alg).Window.Microseconds()).Scan(&give); err != nil {
		t.Fatalf("schema 4's refund: %v", err)
	}
	want, err := fields(give, limit, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err = s.Refund(ctx, cur, alg, now, now, 1)
	same("a refund", want, res, err)

	op1, op2, op3 := pgsql.Params(other, time.Time{})
	var set []int64
	if err := pool.QueryRow(ctx, schema4.set, [][]byte{rold, key(old, other)}, []string{"gcra", "fixed_window"},
		[]*int64{&p1, &p2, p3, &op1, &op2, op3}, us, int64(1), grace, nil, nil,
		[]int64{limit, algo.MaxCost(other)}).Scan(&set); err != nil || len(set) != 10 {
		t.Fatalf("schema 4's set: %v, %v", set, err)
	}
	results, err := s.DecideSet(ctx, cur, []algorithms.Algorithm{alg, other}, now, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range []algorithms.Algorithm{alg, other} {
		want, err := fields(set[5*i:5*i+5], algo.MaxCost(a), 0)
		if err != nil {
			t.Fatal(err)
		}
		if want.Allowed {
			want.SetCharged(a, 1)
		}
		same(fmt.Sprint("a set's limit ", i), want, results[i], nil)
	}
}

// TestRefusesASchemaThatNoLongerServesIt: a store keeps deciding on a
// schema a newer store migrated, while the schema says it serves the
// store's version, and refuses every call, with store.ErrUnavailable, once
// a sweep finds that it no longer does.
func TestRefusesASchemaThatNoLongerServesIt(t *testing.T) {
	ctx := context.Background()
	pgtest.Require(t)
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	pool, err := pgxpool.New(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := New(pool, WithCoalescing(0))
	alg := algorithms.FixedWindow{Limit: 100, Window: time.Minute}
	k := store.Key{Name: "refuse"}
	check := func(what string, refused bool) {
		t.Helper()
		if err := s.recheck(ctx, pool); (err != nil) != refused {
			t.Fatalf("%s: the check says %v", what, err)
		}
		_, err := s.Decide(ctx, k, alg, time.Now(), 1)
		if got := errors.Is(err, errNewerSchema) && errors.Is(err, store.ErrUnavailable); got != refused ||
			!refused && err != nil {
			t.Fatalf("%s: a decision: %v; refused %v, want %v", what, err, got, refused)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	check("this version's schema", false)
	if _, err := pool.Exec(
		ctx, "UPDATE ratewise.meta SET version = $1, compatible = $2", pgschema.Version+1, pgschema.Version,
	); err != nil {
		t.Fatal(err)
	}
	check("a newer schema that serves this version", false)
	if _, err := pool.Exec(ctx, "UPDATE ratewise.meta SET compatible = $1", pgschema.Version+1); err != nil {
		t.Fatal(err)
	}
	check("a newer schema that no longer serves it", true)
}
