package ratewise_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storememory"
)

// fixedClock stands in for the system clock so the output is repeatable.
type fixedClock struct{ now time.Time }

func (c *fixedClock) Now() time.Time { return c.now }

func Example() {
	ctx := context.Background()
	clock := &fixedClock{now: time.Date(2026, 6, 1, 13, 59, 30, 0, time.UTC)}

	// 3 requests per minute per user, counted exactly over any minute.
	limiter, err := ratewise.New(storememory.New(),
		algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("api"), ratewise.WithClock(clock))
	if err != nil {
		panic(err)
	}
	for range 4 {
		res, err := limiter.Allow(ctx, "user:1001")
		if err != nil {
			panic(err) // the store failed: do not treat it as allowed
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", res.Allowed, res.Remaining, res.RetryAfter)
	}
	clock.now = clock.now.Add(time.Minute)
	res, _ := limiter.Allow(ctx, "user:1001")
	fmt.Printf("a minute later: allowed=%v remaining=%d\n", res.Allowed, res.Remaining)
	// Output:
	// allowed=true remaining=2 retry-after=0s
	// allowed=true remaining=1 retry-after=0s
	// allowed=true remaining=0 retry-after=0s
	// allowed=false remaining=0 retry-after=1m0s
	// a minute later: allowed=true remaining=2
}
