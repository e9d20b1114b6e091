package storeredis_test

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// 64 waiters on two limiters, each with its own client, share one key at
// 50 per second on a real Redis for 5 seconds. Each wait books its turn in
// one round trip and sleeps until it, so they are admitted at 50 per second
// ± 1, judged by when each waiter wakes, with at most 2 round trips per
// admission.
func TestWaitersHoldTheRate(t *testing.T) {
	addr := redistest.Standalone(t).Addr
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(50), Burst: 1}
	key := testKey(t) + ":" + time.Now().Format(time.RFC3339Nano)
	var limiters []*ratewise.Limiter
	var trips []*redistest.RoundTrips
	for range 2 {
		c := newClient(t, addr)
		trips = append(trips, redistest.CountRoundTrips(c))
		l, err := ratewise.New(storeredis.New(c), alg)
		if err != nil {
			t.Fatal(err)
		}
		limiters = append(limiters, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var mu sync.Mutex
	var turns []time.Time // when each admitted waiter woke
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 64 {
		wg.Go(func() {
			l := limiters[w%2]
			for {
				_, err := l.Wait(ctx, key)
				if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
					return // the run is over
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				turns = append(turns, time.Now())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	sort.Slice(turns, func(i, j int) bool { return turns[i].Before(turns[j]) })
	if len(turns) < 100 {
		t.Fatalf("%d admissions in 5s", len(turns))
	}
	// The first and last few turns are left out: the first calls also load
	// the script, and the last race the deadline.
	inner := turns[5 : len(turns)-5]
	span := inner[len(inner)-1].Sub(inner[0])
	rate := float64(len(inner)-1) / span.Seconds()
	perAdmission := float64(trips[0].Load()+trips[1].Load()) / float64(len(turns))
	t.Logf("%d admissions over %v: %.2f per second, %.2f round trips per admission", len(turns), span, rate, perAdmission)
	if rate < 49 || rate > 51 {
		t.Errorf("waiters were admitted at %.2f per second, want 50 ± 1", rate)
	}
	if perAdmission > 2 {
		t.Errorf("%.2f round trips per admission, want at most 2", perAdmission)
	}
}
