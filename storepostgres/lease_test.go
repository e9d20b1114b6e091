package storepostgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// TestResetBesideLease: a Reset racing a lease's booking on one key never
// loses the lease's units. Whichever commits first, the key ends charged
// with them: booked after the reset, or in the mark the reset puts back.
// A reset that read the mark before the booking wrote it, and wrote after
// the booking committed, would leave the key full.
func TestResetBesideLease(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	ctx := context.Background()
	const rounds = 200
	run := time.Now().UnixNano() // fresh keys each time the test runs
	for i := range rounds {
		key := store.Key{Name: fmt.Sprintf("%s:%d:%d", testKey(t), run, i)}
		var wg sync.WaitGroup
		var leaseErr, resetErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			var res algorithms.Result
			res, _, leaseErr = s.Lease(ctx, key, alg, now, 5, time.Second)
			if leaseErr == nil && !res.Allowed {
				leaseErr = fmt.Errorf("a lease of 5 of a fresh burst of 10 denied: %+v", res)
			}
		}()
		go func() {
			defer wg.Done()
			resetErr = s.Reset(ctx, key, alg)
		}()
		wg.Wait()
		if leaseErr != nil || resetErr != nil {
			t.Fatalf("round %d: lease %v, reset %v", i, leaseErr, resetErr)
		}
		res, err := s.Decide(ctx, key, alg, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		if res.Remaining != 5 {
			t.Fatalf("round %d: after a lease of 5 and a Reset racing it, Remaining %d of 10, want 5", i, res.Remaining)
		}
	}
}
