package main

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storememory"
)

func main() {
	// 3 requests per minute per user, counted exactly over any minute.
	limiter, err := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 3, Window: time.Minute})
	if err != nil {
		panic(err) // invalid parameters
	}
	for range 4 {
		res, err := limiter.Allow(context.Background(), "user:1001")
		if err != nil {
			panic(err) // the store failed: never treat it as allowed
		}
		fmt.Printf("allowed=%v remaining=%d retry-after=%v\n", res.Allowed, res.Remaining, res.RetryAfter.Round(time.Second))
	}
}
