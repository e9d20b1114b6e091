package storepostgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// BenchmarkBatchFunction measures what one decision's failure being its
// own costs a batch: a call of 64 GCRA admissions of the batch function,
// on 64 keys and on one hot key, by the function of schema 4
// (fn=fails-together, kept for stores of that version during a rolling
// deploy), where one error failed the batch, and by this schema's
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
					p1s[i], p2s[i], p3s[i] = pgsql.Params(alg)
				}
				var replies []int64
				var failed []*string
				for b.Loop() {
					var err error
					if fn == "fails-together" {
						err = pool.QueryRow(ctx, "SELECT ratewise.gcra_batch($1, $2, $3, $4, $5, $6, $7)",
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
