// Package loadgen drives concurrent callers over a set of keys for a fixed
// time, for the commands that measure decisions per second and latency
// (bench/cmd/coalescing, bench/cmd/thresholds, bench/peers).
package loadgen

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is what a run made: decisions completed, errors, denials among
// the decisions, and the latency percentiles of every call.
type Result struct {
	Decisions, Errors, Denied int64
	P50, P99                  time.Duration
}

// Drive runs callers goroutines for d, each calling decide in a loop on
// keys in turn, from a different starting point each. decide reports
// whether the request was admitted; an error counts as no decision.
func Drive(callers int, keys []string, d time.Duration, decide func(key string) (bool, error)) Result {
	var done, failed, denied atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			var lat []time.Duration
			i := g * 7919
			for time.Now().Before(deadline) {
				i++
				t := time.Now()
				ok, err := decide(keys[i%len(keys)])
				lat = append(lat, time.Since(t))
				if err != nil {
					failed.Add(1)
					continue
				}
				done.Add(1)
				if !ok {
					denied.Add(1)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(all)
	r := Result{Decisions: done.Load(), Errors: failed.Load(), Denied: denied.Load()}
	if len(all) > 0 {
		r.P50, r.P99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}
