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

	first, second := w.writer(), w.writer()
	if len(first) != 15 || first[:8] != string(w.id[:]) || first[:8] != second[:8] || second[8:] <= first[8:] {
		t.Fatalf("writers %x then %x: want the store's 8 bytes, then growing 7-byte numbers", first, second)
	}
}
