package storepostgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// TestSweepDeletesOnlyExpired writes 2,000 keys, marks every other row
// expired on the server's clock a minute ago, and a tenth of the rest 5
// seconds ago, within the sweeps' margin of 10 seconds, and sweeps the
// table from its first page to its last: the rows a minute past their
// expiry go, every other row stays and still decides as before. It runs on
// a server of its own, whose table holds only its rows.
func TestSweepDeletesOnlyExpired(t *testing.T) {
	_, pool := ownServer(t)
	ctx := context.Background()
	s := storepostgres.New(pool)
	alg := algorithms.FixedWindow{Limit: 10, Window: 24 * time.Hour}
	const keys = 2000
	for i := range keys {
		if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("k", i)}, alg, time.Now(), 1); err != nil {
			t.Fatal(err)
		}
	}
	// The rows of odd keys expired a minute ago, past the sweeps' margin.
	tag, err := pool.Exec(ctx, `UPDATE ratewise.state SET expires = ratewise.now_us() - 60000000
		WHERE (substring(convert_from(key, 'UTF8') FROM 'k(\d+)$')::int) % 2 = 1`)
	if err != nil || tag.RowsAffected() != keys/2 {
		t.Fatalf("marking rows expired: %v, %d rows", err, tag.RowsAffected())
	}
	// Keys 0, 20, 40, … expired 5 seconds ago: recently, within the margin.
	tag, err = pool.Exec(ctx, `UPDATE ratewise.state SET expires = ratewise.now_us() - 5000000
		WHERE (substring(convert_from(key, 'UTF8') FROM 'k(\d+)$')::int) % 20 = 0`)
	if err != nil || tag.RowsAffected() != keys/20 {
		t.Fatalf("marking rows expired recently: %v, %d rows", err, tag.RowsAffected())
	}
	var pages int64
	if err := pool.QueryRow(
		ctx, "SELECT pg_relation_size('ratewise.state') / current_setting('block_size')::int",
	).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	var deleted int64
	// Each sweep covers 16 pages from a cursor that starts anywhere and
	// wraps: twice the sweeps the table needs cover it whole.
	for range 2 * (pages/16 + 2) {
		n, err := s.Sweep(ctx)
		if err != nil {
			t.Fatal(err)
		}
		deleted += n
	}
	// A sweep the decisions started may have run beside these, so the
	// rows left tell, not the count of these sweeps.
	var left, odd int64
	if err := pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE
		(substring(convert_from(key, 'UTF8') FROM 'k(\d+)$')::int) % 2 = 1) FROM ratewise.state`,
	).Scan(&left, &odd); err != nil {
		t.Fatal(err)
	}
	if left != keys/2 || odd != 0 || deleted == 0 {
		t.Fatalf(
			"after sweeps over %d pages that deleted %d rows, %d rows are left, %d of them expired; want the %d that count",
			pages,
			deleted,
			left,
			odd,
			keys/2,
		)
	}
	for i := range 4 {
		res, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("k", i)}, alg, time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		want := int64(9) // the even keys kept their admission
		if i%2 == 1 {
			want = 10
		}
		if res.Remaining != want {
			t.Fatalf("key k%d after the sweeps: Remaining %d, want %d", i, res.Remaining, want)
		}
	}
}
