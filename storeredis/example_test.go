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

// newLimiter is a limiter on the Redis at addr, on a client with the
// settings docs/redis.md recommends ("Client settings").
func newLimiter(addr string) (*ratewise.Limiter, error) {
	// A limiter's client: deadlines honoured on the socket, every wait
	// shorter than the request's budget for a decision (here 100ms), and
	// no retries, which would make a decision take several attempts and
	// the store keep an ID for every write as long as go-redis may resend
	// it. For a ClusterClient, also ClusterStateReloadInterval:
	// time.Second; it resends on MaxRedirects, which its IDs make safe.
	rdb := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           30 * time.Millisecond,
		DialerRetries:         1,
		DialerRetryTimeout:    10 * time.Millisecond,
		ReadTimeout:           50 * time.Millisecond,
		WriteTimeout:          50 * time.Millisecond,
		PoolTimeout:           50 * time.Millisecond,
		MaxRetries:            -1,
	})
	warn := func(err error) { fmt.Println(err) } // or log it
	s := storeredis.New(rdb, storeredis.WithWarnings(100*time.Millisecond, warn))
	return ratewise.New(s, algorithms.SlidingLog{Limit: 3, Window: time.Minute})
}

func ExampleNew() {
	m, err := miniredis.Run() // stands in for your Redis
	if err != nil {
		panic(err)
	}
	defer m.Close()
	limiter, err := newLimiter(m.Addr())
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
