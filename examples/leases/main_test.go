package main

import (
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// TestRun runs the demo briefly on the memory store, with and without
// leases, and checks that no window goes over the limit.
func TestRun(t *testing.T) {
	alg := algorithms.FixedWindow{Limit: 1000, Window: 10 * time.Millisecond}
	for _, leased := range []bool{false, true} {
		r := run(memoryStores(), alg, 2, 2, 50*time.Millisecond, leased)
		if r.decisions == 0 {
			t.Fatalf("leased %v: no decisions", leased)
		}
		counts := map[int64]int64{}
		for _, at := range r.admissions {
			counts[at/alg.Window.Microseconds()]++
		}
		for w, n := range counts {
			if n > alg.Limit {
				t.Fatalf("leased %v: window %d admitted %d, over the limit of %d", leased, w, n, alg.Limit)
			}
		}
	}
}
