package storeredis

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWritersGate: a call waits while any of its keys has a call in
// flight, marks all of them or none, and gives up when its context ends;
// each call's writer numbers it above every earlier one.
func TestWritersGate(t *testing.T) {
	w := newWriters()
	ctx := context.Background()
	if err := w.acquire(ctx, []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	// "c" is free but "b" is not: nothing is marked while the call waits.
	acquired := make(chan error, 1)
	go func() { acquired <- w.acquire(ctx, []string{"c", "b"}) }()
	select {
	case err := <-acquired:
		t.Fatalf("acquired a key in flight: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := w.acquire(ctx, []string{"c"}); err != nil {
		t.Fatalf("a free key waited: %v", err)
	}
	w.release([]string{"c"})
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := w.acquire(short, []string{"a"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a call on a key in flight past its deadline: %v, want DeadlineExceeded", err)
	}
	w.release([]string{"a", "b"})
	if err := <-acquired; err != nil {
		t.Fatalf("the waiting call, once the keys were released: %v", err)
	}
	w.release([]string{"c", "b"})
	if len(w.busy) != 0 {
		t.Fatalf("keys left in flight: %v", w.busy)
	}

	first, second := w.writer(time.Time{}), w.writer(time.Time{})
	if len(first) != 22 || first[:8] != string(w.id[:]) || first[:8] != second[:8] || second[8:15] <= first[8:15] ||
		first[15:] != "\x00\x00\x00\x00\x00\x00\x00" {
		t.Fatalf("writers %x then %x: want the store's 8 bytes, then growing 7-byte numbers, then no deadline",
			first, second)
	}
}

// TestServerClock: the store places a deadline on Redis's clock only once
// a reply has told it where that clock is, and never later than the
// replies allow: Redis read its clock before the reply arrived.
func TestServerClock(t *testing.T) {
	c := serverClock{base: time.Now()}
	deadline := c.base.Add(time.Second)
	if got := c.at(deadline); got != 0 {
		t.Fatalf("a deadline before any reply: %d, want 0 (none)", got)
	}
	// A reply decided when Redis's clock read 10^9 µs more than the store's
	// monotonic clock (counted from its base) did on arrival; a later reply
	// that reads less ahead (it was slower to arrive) teaches nothing.
	const ahead = 1_000_000_000
	c.saw(time.Since(c.base).Microseconds() + ahead)
	c.saw(time.Since(c.base).Microseconds() + ahead - 2_000_000)
	// The store read its clock after each reply was decided: the deadline
	// lands at most where Redis's clock reads ahead µs more than the
	// store's, and within a millisecond of it here.
	want := deadline.Sub(c.base).Microseconds() + ahead
	if got := c.at(deadline); got > want || got < want-1_000 {
		t.Fatalf("the deadline on Redis's clock: %d, want %d (at most, and within 1ms)", got, want)
	}
	if got := c.at(time.Time{}); got != 0 {
		t.Fatalf("no deadline: %d, want 0", got)
	}
}
