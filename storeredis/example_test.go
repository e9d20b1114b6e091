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

func ExampleNew() {
	m, err := miniredis.Run() // stands in for your Redis
	if err != nil {
		panic(err)
	}
	defer m.Close()
	addr := m.Addr()

	rdb := redis.NewClient(&redis.Options{Addr: addr}) // or a ClusterClient, Ring, ...
	limiter, err := ratewise.New(storeredis.New(rdb), algorithms.SlidingLog{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	for range 4 {
		res, err := limiter.Allow(context.Background(), "user:1001")
		if err != nil {
			panic(err) // Redis failed: do not treat it as allowed
		}
		fmt.Println(res.Allowed, res.Remaining)
	}
	// Output:
	// true 2
	// true 1
	// true 0
	// false 0
}
