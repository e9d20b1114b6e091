package storeredis_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// fullListener returns the address of a listener whose accept queue is full
// (backlog 0, one connection waiting, none accepted), so that every further
// connect times out, as a Redis overwhelmed by new connections does.
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

// TestDialTimeoutIsUnavailable: a dial timeout of the client's own, under a
// context with no deadline, is the store being unavailable, not a context
// error; only the caller's context ending is one.
func TestDialTimeoutIsUnavailable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: fullListener(t), DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	s := storeredis.New(c)
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}

	res, err := s.Decide(context.Background(), "k", alg, time.Now(), 1)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || res.Allowed {
		t.Fatalf("dial timeout under context.Background(): %+v, %v; want ErrUnavailable and no context error", res, err)
	}
	if !strings.Contains(err.Error(), "i/o timeout") {
		t.Fatalf("error %q does not say it timed out", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := s.Decide(ctx, "k", alg, time.Now(), 1); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("the caller's deadline passing during the dial: %v, want context.DeadlineExceeded", err)
	}
}
