package fault_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// fullListener returns the address of a listener whose accept queue is full
// (backlog 0, one connection waiting, none accepted), so that every further
// connect times out, as a Redis overwhelmed by new connections does. (A copy
// of storeredis's, which its test package keeps to itself.)
func fullListener(t *testing.T) string {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return addr
}

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
	addr := fullListener(t)
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
