package fault_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/storeredis"
)

// TestPoolExhaustion: 32 callers with 100 ms deadlines share a pool of 2
// connections (PoolTimeout 50 ms, no coalescing) while Redis stalls for
// 300 ms (DEBUG SLEEP 0.3). Callers that find no connection fail with
// store.ErrUnavailable (go-redis's pool timeout) or their deadline; every
// call returns within its bound, none is reported as allowed, and
// decisions succeed again after the stall.
func TestPoolExhaustion(t *testing.T) {
	const deadline = 100 * time.Millisecond
	srv := startServer(t, true)
	o := clientOptions(srv.Addr)
	o.PoolSize, o.PoolTimeout = 2, 50*time.Millisecond
	rdb := newClient(t, o)
	lim := newLimiter(t, storeredis.New(rdb, storeredis.WithCoalescing(0)))
	decide := func(key string) (ratewise.Result, error) {
		return withDeadline(deadline, func(ctx context.Context) (ratewise.Result, error) { return lim.Allow(ctx, key) })
	}
	if _, err := decide("pool:warm"); err != nil {
		t.Fatal(err)
	}

	ty := &tally{deadlines: true}
	stop := make(chan struct{})
	wait := load(32, ty, stop, func(i int) (ratewise.Result, error) { return decide(fmt.Sprintf("pool:%d", i)) })
	time.Sleep(150 * time.Millisecond)
	before := ty.figures()
	var stallErr error
	ended := stall(t, srv, 300*time.Millisecond, &stallErr)
	stallEnd, ok := <-ended
	if !ok {
		close(stop)
		wait()
		t.Fatalf("DEBUG SLEEP: %v", stallErr)
	}
	errorsAtStallEnd := ty.errors()
	recovered := waitFor(3*time.Second, func() bool { return ty.lastOK.Load() > stallEnd.UnixNano() })
	recovery := time.Duration(ty.lastOK.Load() - stallEnd.UnixNano())
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()

	t.Logf("figures: %s before_stall{%s} errors_by_stall_end=%d recovery=%v deadline=%v bound=%v",
		ty.figures(), before, errorsAtStallEnd, recovery.Round(time.Millisecond), deadline, deadline+margin)
	ty.check(t)
	if got, max := time.Duration(ty.maxLatency.Load()), deadline+margin; got > max {
		t.Errorf("a call took %v, want at most %v (its deadline plus a margin)", got, max)
	}
	if ty.poolTimeouts.Load() == 0 {
		t.Errorf("no call timed out waiting for a connection, so the pool was never exhausted")
	}
	if !recovered {
		t.Errorf("no decision succeeded within 3s after the stall ended")
	}
}
