package ratewise_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// Wait sleeps through the limiter's clock, which a test clock turns into
// moving time: three waits at 1 per second take two seconds of it, plus at
// most an eighth of each wait of spread.
func TestWaitSleepsUntilAdmitted(t *testing.T) {
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratewisetest.NewClock(start)
	l, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 1}, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := l.Wait(context.Background(), "k")
		if err != nil || !res.Allowed {
			t.Fatalf("wait %d: %+v, %v", i, res, err)
		}
	}
	if took := clock.Now().Sub(start); took < 2*time.Second || took > 2*time.Second+2*time.Second/8 {
		t.Fatalf("three waits at 1 per second took %v of the clock, want 2s to 2.25s", took)
	}
}

// A wait that would outlast the deadline fails at once and charges nothing.
func TestWaitRefusesAWaitPastTheDeadline(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	l, _ := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2}, ratewise.WithClock(clock))
	l.AllowN(context.Background(), "k", 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	res, err := l.WaitN(ctx, "k", 2) // 2s to wait, the deadline an hour away: fine
	if err != nil || !res.Allowed {
		t.Fatalf("a wait within the deadline: %+v, %v", res, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	before := clock.Now()
	if res, err := l.Wait(short, "k"); !errors.Is(err, ratewise.ErrWaitExceedsDeadline) || res.Allowed {
		t.Fatalf("a 1s wait with 500ms left: %+v, %v; want ErrWaitExceedsDeadline", res, err)
	}
	if !clock.Now().Equal(before) {
		t.Fatal("the refused wait slept")
	}
	if res, _ := l.Peek(context.Background(), "k"); res.Remaining != 0 || res.RetryAfter != time.Second {
		t.Fatalf("after the refused wait: %+v, want nothing charged (1s to wait)", res)
	}
}

// Without a test clock, Wait sleeps on a timer and returns the context's
// error when it is cancelled.
func TestWaitEndsWithItsContext(t *testing.T) {
	l, _ := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1})
	l.Allow(context.Background(), "k")
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	if _, err := l.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}
