package fault_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestFullAcceptQueueIsUnavailable: a server whose accept queue is full,
// reached through a Limiter with the recommended client settings by 8
// callers on context.Background(): each call fails with
// store.ErrUnavailable, never a context error nor allowed, within the dial
// timeout plus a margin. With coalescing on (the default), a call can
// wait for the round trip in flight before making its own, so its bound is
// twice the dial timeout. storeredis's TestDialTimeoutIsUnavailable checks
// the classification of one call on the store; this one adds the Limiter,
// concurrent callers, the recommended settings and the time bound.
func TestFullAcceptQueueIsUnavailable(t *testing.T) {
	addr := redistest.FullListener(t)
	o := clientOptions(addr)
	for _, tc := range []struct {
		name  string
		opts  []storeredis.Option
		bound time.Duration
	}{
		{"coalescing=0", []storeredis.Option{storeredis.WithCoalescing(0)}, o.DialTimeout + margin},
		{"coalescing=default", nil, 2*o.DialTimeout + margin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb := newClient(t, clientOptions(addr))
			lim := newLimiter(t, storeredis.New(rdb, tc.opts...))
			ty := &tally{}
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					for range 3 {
						start := time.Now()
						res, err := lim.Allow(context.Background(), fmt.Sprintf("accept:%d", i))
						ty.record(res, err, time.Since(start))
						if err != nil && (!errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)) {
							ty.violate("not ErrUnavailable alone: %v", err)
						}
					}
				})
			}
			wg.Wait()

			t.Logf("figures: %s dial_timeout=%v bound=%v", ty.figures(), o.DialTimeout, tc.bound)
			ty.check(t)
			if got, want := ty.unavailable.Load(), ty.calls.Load(); got != want {
				t.Errorf("%d of %d calls failed with store.ErrUnavailable, want all", got, want)
			}
			if got := time.Duration(ty.maxLatency.Load()); got > tc.bound {
				t.Errorf("a call took %v, want at most %v", got, tc.bound)
			}
		})
	}
}
