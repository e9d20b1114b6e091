// Command boundary runs the window-boundary attack that note 004 warns about
// against every ratewise algorithm on the in-memory store: with a limit of
// 100 per minute, 100 requests arrive at 13:59:59 and 100 more at 14:00:00.
// It needs no server and reads no real clock.
package main

import (
	"context"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storememory"
)

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func main() {
	const limit = 100
	algs := []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: limit, Window: time.Minute},
		algorithms.SlidingLog{Limit: limit, Window: time.Minute},
		algorithms.SlidingWindow{Limit: limit, Window: time.Minute, SubWindows: 6},
		algorithms.TokenBucket{Capacity: limit, Refill: algorithms.PerMinute(limit)},
		algorithms.GCRA{Rate: algorithms.PerMinute(limit), Burst: limit},
	}
	bursts := []time.Time{
		time.Date(2026, 6, 1, 13, 59, 59, 0, time.UTC),
		time.Date(2026, 6, 1, 14, 0, 0, 0, time.UTC),
	}
	fmt.Printf("Limit %d per minute; %d requests at 13:59:59, %d at 14:00:00.\n\n", limit, limit, limit)
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "algorithm\tadmitted at 13:59:59\tadmitted at 14:00:00\ttotal in 1s\tx limit")
	for _, alg := range algs {
		c := &clock{}
		l, err := ratewise.New(storememory.New(), alg, ratewise.WithClock(c))
		if err != nil {
			fmt.Fprintln(os.Stderr, "boundary:", err)
			os.Exit(2)
		}
		var counts []int
		for _, at := range bursts {
			c.now = at
			n := 0
			for range limit {
				res, err := l.Allow(context.Background(), "client")
				if err != nil {
					fmt.Fprintln(os.Stderr, "boundary:", err)
					os.Exit(1)
				}
				if res.Allowed {
					n++
				}
			}
			counts = append(counts, n)
		}
		total := counts[0] + counts[1]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%.2f\n", alg.Name(), counts[0], counts[1], total, float64(total)/limit)
	}
	w.Flush()
}
