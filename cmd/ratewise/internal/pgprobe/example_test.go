package pgprobe_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/pgprobe"
)

// At start-up, on the pool the app passes to storepostgres.New, as the
// app's own role: log what is not ok, and refuse to start on a failure. It
// needs a database, so it is compiled, not run.
func ExampleRun() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()

	rep := pgprobe.Run(ctx, pool)
	for _, f := range rep.Findings {
		if f.Status != pgprobe.StatusOK {
			log.Print(f) // failure permissions: role app in database app lacks USAGE on the schema ratewise; change: ...
		}
	}
	if rep.Worst() == pgprobe.StatusFailure {
		log.Fatal("the database for ratewise fails a check") // or alert
	}
}
