package storememory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// A test drives a limiter on the memory store with one manual clock: the
// limiter decides at its time (ratewise.WithClock), and the store drops
// idle keys by it (WithClock), so the test never sleeps and its output is
// repeatable.
func ExampleWithClock() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	s := storememory.New(storememory.WithClock(clock))
	// A bucket of 2 tokens, refilled at 1 per second.
	limiter, err := ratewise.New(s, algorithms.TokenBucket{Capacity: 2, Refill: algorithms.PerSecond(1)},
		ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	allow := func() ratewise.Result {
		res, err := limiter.Allow(ctx, "user:1001")
		if err != nil {
			panic(err) // never treat an error as allowed
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", res.Allowed, res.Remaining, res.RetryAfter)
		return res
	}
	allow()
	allow()
	res := allow()
	clock.Advance(res.RetryAfter) // the wait a denied request is told
	allow()
	// Output:
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1s
	// allowed=true remaining=0 retry-after=0s
}
