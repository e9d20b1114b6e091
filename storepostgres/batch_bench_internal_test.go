package storepostgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// BenchmarkBatchFunction measures what one decision's failure being its
// own costs a batch: a call of 64 GCRA admissions of the batch function,
// on 64 keys and on one hot key, by the function of schema 4
// (fn=fails-together, as that schema had it, made here in a schema of the
// benchmark's own), where one error failed the batch, and by this schema's
// (fn=fails-alone), whose decisions run in one subtransaction. Compare
// the two with benchstat:
//
//	go test -run XXX -bench BatchFunction -count 6 ./storepostgres
func BenchmarkBatchFunction(b *testing.B) {
	ctx := context.Background()
	pgtest.Require(b)
	pool, err := pgxpool.New(ctx, pgtest.Shared(b).URL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if err := New(pool).Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS ratewise_bench"); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, schema4Batch); err != nil {
		b.Fatal(err)
	}
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1_000_000), Burst: 1_000_000}
	const n = 64
	for _, keys := range []int{n, 1} {
		for _, fn := range []string{"fails-together", "fails-alone"} {
			b.Run(fmt.Sprintf("keys=%d/fn=%s", keys, fn), func(b *testing.B) {
				rkeys := make([][]byte, n)
				nows := make([]*int64, n)
				costs := make([]int64, n)
				p1s, p2s := make([]int64, n), make([]int64, n)
				p3s := make([]*int64, n)
				prefix := fmt.Sprint("bench-", time.Now().UnixNano(), "-")
				for i := range n {
					rkeys[i] = key(store.Key{Name: fmt.Sprint(prefix, i%keys)}, alg)
					us := time.Now().UnixMicro()
					nows[i], costs[i] = &us, 1
					p1s[i], p2s[i], p3s[i] = pgsql.Params(alg, time.Time{})
				}
				var replies []int64
				var failed []*string
				for b.Loop() {
					var err error
					if fn == "fails-together" {
						err = pool.QueryRow(ctx, "SELECT ratewise_bench.gcra_batch4($1, $2, $3, $4, $5, $6, $7)",
							rkeys, nows, costs, p1s, p2s, p3s, int64(0)).Scan(&replies)
					} else {
						err = pool.QueryRow(ctx, "SELECT * FROM ratewise.gcra_decide_batch($1, $2, $3, $4, $5, $6, $7, $8)",
							rkeys, nows, costs, p1s, p2s, p3s, int64(0), batchLockTimeout).Scan(&replies, &failed)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/decision")
			})
		}
	}
}

// schema4Batch is schema 4's batch function for GCRA, as that schema's
// drivers.sql made it.
const schema4Batch = `CREATE OR REPLACE FUNCTION ` +
	`ratewise_bench.gcra_batch4(_keys bytea[], _nows bigint[], _costs bigint[],
    _p1s bigint[], _p2s bigint[], _p3s bigint[], _grace bigint)
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  _key bytea;
  _now bigint;
  _cost bigint;
  _slack bigint := 0;
  _p1 bigint;
  _p2 bigint;
  _p3 bigint;
  r bigint[];
  replies bigint[] := '{}';
BEGIN
  PERFORM set_config('lock_timeout', '5s', true);
  FOR i IN 1..cardinality(_keys) LOOP
    _key := _keys[i];
    _now := _nows[i];
    _cost := _costs[i];
    _p1 := _p1s[i];
    _p2 := _p2s[i];
    _p3 := _p3s[i];
    INSERT INTO ratewise.state AS s (key, state, expires, res)
SELECT _key, d.new, CASE WHEN d.new IS NULL THEN n.clock ELSE n.clock + greatest(d.keep, 1) + _grace END,
  ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
FROM (SELECT ratewise.now_us() AS clock) n,
  ratewise.gcra_step(NULL, coalesce(_now, n.clock), _cost, _slack, _p1, _p2, _p3) d
WHERE true
ON CONFLICT (key) DO UPDATE SET (state, expires, res) = (
  SELECT coalesce(d.new, s.state),
    CASE WHEN d.new IS NULL THEN s.expires ELSE n.clock + greatest(d.keep, 1) + _grace END,
    ARRAY[d.allowed::int, d.remaining, d.retry, d.reset, d.at, d.delay]
  FROM (SELECT ratewise.now_us() AS clock) n,
    ratewise.gcra_step(s.state, coalesce(_now, n.clock), _cost, _slack, _p1, _p2, _p3) d)
RETURNING res INTO r;
    replies := replies || r;
  END LOOP;
  RETURN replies;
END $$;`
