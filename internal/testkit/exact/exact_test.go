package exact

import (
	"testing"
	"time"
)

func TestLogHandComputed(t *testing.T) {
	s := time.Second
	l := &Log{Window: 10 * s}
	for i, c := range []struct {
		at        time.Duration
		limit     int64
		cost      int64
		allowed   bool
		remaining int64
	}{
		{0, 3, 2, true, 1},
		{5 * s, 3, 1, true, 0},
		{9 * s, 3, 0, false, 0},  // an inspection asks about a cost of 1
		{10 * s, 3, 2, true, 0},  // the cost at 0 is exactly one window old
		{14 * s, 3, 1, false, 0}, // 5s and 10s still count
		{15 * s, 3, 1, true, 0},
		{16 * s, 5, 0, true, 2}, // a higher limit: 3 count
	} {
		allowed, remaining := l.Decide(c.limit, c.at, c.cost)
		if allowed != c.allowed || remaining != c.remaining {
			t.Fatalf("step %d at %v: got %v, %d; want %v, %d", i, c.at, allowed, remaining, c.allowed, c.remaining)
		}
	}
}

func TestLogQuantum(t *testing.T) {
	s := time.Second
	// 10s windows in sub-windows of 2s: a cost at 3s is stamped 2s and
	// stops counting at 12s, not 13s.
	l := &Log{Window: 10 * s, Quantum: 2 * s}
	l.Add(3*s, 4)
	if got := l.Sum(11*s + 999*time.Millisecond); got != 4 {
		t.Fatalf("at 11.999s: %d, want 4", got)
	}
	if got := l.Sum(12 * s); got != 0 {
		t.Fatalf("at 12s: %d, want 0", got)
	}
}

func TestMaxInWindowHandComputed(t *testing.T) {
	s := time.Second
	ev := []Event{{0, 1}, {1 * s, 1}, {2 * s, 2}, {11 * s, 1}, {12 * s, 1}, {12 * s, 1}}
	if got := MaxInWindow(ev, 10*s); got != 4 {
		t.Fatalf("10s: got %d, want 4", got)
	}
	// [1s, 3s) and [11s, 13s) hold 3; [0, 2s) only 2.
	if got := MaxInWindow(ev, 2*s); got != 3 {
		t.Fatalf("2s: got %d, want 3", got)
	}
	if got := MaxInWindow(nil, s); got != 0 {
		t.Fatalf("no events: got %d", got)
	}
}

func TestMaxInWindowSpans(t *testing.T) {
	s := time.Second
	// Window 10s. Admissions at 0, 1, 9 (cost 2), 10, 12, 19.5, 20: the
	// span [9s, 19s) holds 9 (2), 10 and 12 = 4; [10s, 20s) holds 10, 12
	// and 19.5 = 3; [0s, 10s) holds 0, 1 and 9 (2) = 4; no span holds 5.
	ev := []Event{{0, 1}, {1 * s, 1}, {9 * s, 2}, {10 * s, 1}, {12 * s, 1}, {19*s + s/2, 1}, {20 * s, 1}}
	if got, want := MaxInWindow(ev, 10*s), int64(4); got != want {
		t.Fatalf("MaxInWindow: got %d, want %d", got, want)
	}
	// With a 3s window, [9s, 12s) holds 9 (2) and 10 = 3; 12 is exactly
	// one window after 9, so it does not join them.
	if got, want := MaxInWindow(ev, 3*s), int64(3); got != want {
		t.Fatalf("MaxInWindow, 3s: got %d, want %d", got, want)
	}
}
