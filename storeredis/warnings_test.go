package storeredis_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/storeredis"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Without WithWarnings, New logs each of a client's unsafe settings through
// slog, once per process however many stores use such a client; with
// WithWarnings(0, nil) it logs nothing.
func TestUnsafeClientLoggedOnceByDefault(t *testing.T) {
	var out syncBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })

	// A read timeout no other test uses, so that its warning is new to
	// this process.
	read := 7*time.Second + 123*time.Millisecond
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: read})
	t.Cleanup(func() { c.Close() })
	want := "ReadTimeout is " + read.String()
	storeredis.New(c)
	storeredis.New(c)
	if n := strings.Count(out.String(), want); n != 1 {
		t.Fatalf("the warning %q logged %d times, want once:\n%s", want, n, out.String())
	}
	if !strings.Contains(out.String(), "level=WARN") {
		t.Fatalf("not logged at level Warn:\n%s", out.String())
	}

	quiet := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: read + time.Millisecond})
	t.Cleanup(func() { quiet.Close() })
	storeredis.New(quiet, storeredis.WithWarnings(0, nil))
	if strings.Contains(out.String(), "ReadTimeout is "+(read+time.Millisecond).String()) {
		t.Fatalf("WithWarnings(0, nil) logged:\n%s", out.String())
	}
}
