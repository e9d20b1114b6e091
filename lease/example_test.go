package lease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// A hot key limited to 1,000,000 a second, decided through leases: most
// decisions are made from the instance's lease, without a round trip, and
// none goes past the limit. With Redis, wrap
// storeredis.New(rdb, storeredis.WithClientTime()) instead, with Instances
// the number of app instances.
func Example() {
	ctx := context.Background()
	clock := ratewisetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := lease.Wrap(storememory.New(), lease.Policy{Instances: 4, Clock: clock})
	if err != nil {
		panic(err) // an invalid policy
	}
	defer st.Close(ctx) // gives back what the leases hold
	limiter, err := ratewise.New(
		st,
		algorithms.FixedWindow{Limit: 100_000, Window: 100 * time.Millisecond},
		ratewise.WithClock(clock),
	)
	if err != nil {
		panic(err)
	}
	admitted := 0
	end := clock.Now().Add(100 * time.Millisecond)
	for clock.Now().Before(end) { // a request a µs for one window
		res, err := limiter.Allow(ctx, "hot")
		if err != nil {
			panic(err) // the store failed: never treat it as allowed
		}
		if res.Allowed {
			admitted++
		}
		clock.Advance(time.Microsecond)
	}
	fmt.Println("admitted in the window:", admitted)
	// Output:
	// admitted in the window: 100000
}
