package storepostgres_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storepostgres"
)

// A limiter on PostgreSQL, on a pool with the settings docs/postgres.md
// recommends ("Pool settings"): connect_timeout set (1 s), so that a dial
// does not wait out the store's sweep's 10 s; MaxConns 16, about twice what
// the store uses at once; and a deadline on every decision. It needs a
// database, so it is compiled, not run.
func ExampleNew() {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig("postgres://app@db:5432/app?connect_timeout=1")
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close() // the pool is yours: close it last
	s := storepostgres.New(pool)
	defer s.Close() // runs before pool.Close

	// The store creates its schema on first use; Migrate creates it, or
	// says why it cannot, at start-up instead.
	if err := s.Migrate(ctx); err != nil {
		log.Print(err)
		return
	}
	limiter, err := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20})
	if err != nil {
		log.Print(err)
		return
	}

	// Every decision gets a deadline, the limiter's budget.
	decideCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	res, err := limiter.Allow(decideCtx, "user:1001")
	if err != nil {
		log.Print(err) // the database failed: do not treat it as allowed
		return
	}
	fmt.Println(res.Allowed, res.Remaining)
}
