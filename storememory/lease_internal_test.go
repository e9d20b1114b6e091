package storememory

import (
	"context"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// TestMarksGoWithTheirStates: a shard's sweep drops the marks of leases
// whose states stopped counting, on the store's own clock, as it drops the
// states, and keeps those that count: marks stay bounded when leasing
// stops.
func TestMarksGoWithTheirStates(t *testing.T) {
	ctx := context.Background()
	clk := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	s := New(WithClock(clk))
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10} // full again 1s after a lease
	keys := sameShard(s, 3)
	sh := s.shard(s.hash("", keys[0]))
	for _, k := range keys {
		if res, _, err := s.Lease(ctx, store.Key{Name: k}, alg, clk.Now(), 5, 0); err != nil || !res.Allowed {
			t.Fatalf("Lease: %+v, %v", res, err)
		}
	}
	sweep := func() int {
		sh.lock()
		defer sh.unlock()
		sh.opsSinceSweep.Store(sh.sweepAfter.Load())
		sh.sweep(s.elapsed())
		return len(sh.marks.m)
	}
	if n := sweep(); n != len(keys) {
		t.Fatalf("%d marks after a sweep while their states count, want %d", n, len(keys))
	}
	clk.Advance(time.Second + storecheck.ExpiryGrace + time.Second) // past the states and the grace, rounded up
	if n := sweep(); n != 0 {
		t.Fatalf("%d marks after a sweep once their states stopped counting, want 0", n)
	}
}
