package storememory

import (
	"context"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// TestDenialConvertsTheRate: a denial of cost 1 is not remembered, but one
// under a changed rate converts the key's state to it, as any decision
// does, and is written, whatever other keys of the shard have done (which
// decides whether the key's state is stored inline or boxed, and which lock
// a denial takes).
func TestDenialConvertsTheRate(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	old := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	fast := algorithms.GCRA{Rate: algorithms.PerSecond(1000), Burst: 1} // the same scope
	other := algorithms.GCRA{Rate: algorithms.PerSecond(2), Burst: 10}
	run := func(denyingLast bool) algorithms.Result {
		s := New()
		ks := sameShard(s, 4)
		k, z, d, e := ks[0], ks[1], ks[2], ks[3]
		s.Decide(ctx, store.Key{Name: z}, other, t0, 1) // the table's rate count is now 2
		s.Decide(ctx, store.Key{Name: k}, old, t0, 10)  // rate count 1: boxed, counts until t0+10s
		deny := func() { s.Decide(ctx, store.Key{Name: d}, old, t0, 10); s.Decide(ctx, store.Key{Name: d}, old, t0, 1) }
		admit := func() { s.Decide(ctx, store.Key{Name: e}, old, t0, 1) }
		if denyingLast {
			admit()
			deny()
		} else {
			deny()
			admit()
		}
		if r, _ := s.Decide(ctx, store.Key{Name: k}, fast, t0.Add(time.Millisecond), 1); r.Allowed {
			t.Fatal("want a denial under the faster rate")
		}
		res, err := s.Decide(ctx, store.Key{Name: k}, old, t0.Add(3*time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// 10 requests at 1 per second, then the denial at 1,000 per second
	// 1ms later, which converts the 9.999 tokens used to 9.999ms at the
	// new rate: 3s later the key is full. (Had the denial left the state
	// at 1 per second, 3 would be back.)
	for _, denyingLast := range []bool{false, true} {
		if res := run(denyingLast); res.Remaining != 10 {
			t.Fatalf("denying last %v: Remaining %d, want 10", denyingLast, res.Remaining)
		}
	}
}
