package storeredis_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storeredis"
)

func ExampleClientOptions() {
	m, err := miniredis.Run() // stands in for your Redis
	if err != nil {
		panic(err)
	}
	defer m.Close()

	// A client for callers that wait at most 100ms for a decision: your
	// address, credentials and TLS, and the timeouts and retries of a
	// limiter's client (docs/redis.md, "Client settings").
	const budget = 100 * time.Millisecond
	rdb := redis.NewClient(storeredis.ClientOptions(&redis.Options{Addr: m.Addr()}, budget))
	defer rdb.Close()
	s := storeredis.New(rdb, storeredis.WithWarnings(budget, func(err error) { fmt.Println(err) }))
	defer s.Close()

	limiter, err := ratewise.New(s, algorithms.SlidingLog{Limit: 2, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	for range 3 {
		res, err := limiter.Allow(context.Background(), "user:1001")
		if err != nil {
			panic(err) // Redis failed: do not treat it as allowed
		}
		fmt.Println(res.Allowed, res.Remaining)
	}
	// Output:
	// true 1
	// true 0
	// false 0
}
