package redisprobe_test

import (
	"context"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
)

// At start-up, on the client the app passes to storeredis.New: log what is
// not ok, and refuse to start on a failure. docs/redis.md shows this code.
// It needs a Redis, so it is compiled, not run.
func ExampleRun() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true, MaxRetries: -1})
	defer rdb.Close()

	rep := redisprobe.Run(ctx, rdb, 100*time.Millisecond)
	for _, f := range rep.Findings {
		if f.Status != redisprobe.StatusOK {
			log.Print(f) // warning persistence: no AOF, ...; change: ...
		}
	}
	if rep.Worst() == redisprobe.StatusFailure {
		log.Fatal("the Redis for ratewise fails a check") // or alert
	}
}
