package replay

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// orderStore checks that each key's decisions arrive in the trace's order
// and records how many decisions were in flight at once.
type orderStore struct {
	store.Store
	mu       sync.Mutex
	last     map[string]time.Time
	inFlight atomic.Int64
	most     atomic.Int64
	late     atomic.Bool
}

func (s *orderStore) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	key := sk.String()
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	s.mu.Lock()
	if now.Before(s.last[key]) {
		s.late.Store(true)
	}
	s.last[key] = now
	s.mu.Unlock()
	runtime.Gosched() // let the other goroutines in
	return s.Store.Decide(ctx, store.Key{Name: key}, alg, now, cost)
}

// keyedStore keeps each key's state apart and nothing else, as the Redis
// store does (the memory store's sweeps, run at the time of whichever
// decision makes one due, are shared by the keys of a shard, so it is
// never replayed on many goroutines).
type keyedStore struct {
	store.Store // nil: only Decide and Reset are called
	mu          sync.Mutex
	states      map[string]algo.State
}

func (s *keyedStore) Decide(
	_ context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	key := sk.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	st, res := algo.Decide(alg, s.states[key], now, cost)
	s.states[key] = st
	return res, nil
}

func (s *keyedStore) Reset(_ context.Context, sk store.Key, _ algorithms.Algorithm) error {
	key := sk.String()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.states, key)
	return nil
}

// Replaying keys on many goroutines makes the decisions of a replay in
// order: each key's requests stay in order, and keys share nothing.
func TestDecideAllOnManyGoroutinesDecidesAsInOrder(t *testing.T) {
	w, err := workload.Custom(
		workload.Spec{Limit: workload.Limit{Count: 10, Window: time.Minute}, Rate: 0.5, Shape: "poisson",
			Duration: 5 * time.Minute, Keys: 50, Seed: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sliding_window", "gcra"} {
		alg, err := Configure(name, w.Limit, w.Window, Options{})
		if err != nil {
			t.Fatal(err)
		}
		inOrder, err := replayAll(context.Background(), storememory.New(), w, alg, nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		s := &orderStore{Store: &keyedStore{states: map[string]algo.State{}}, last: map[string]time.Time{}}
		atOnce, err := replayAll(context.Background(), s, w, alg, nil, 8)
		if err != nil {
			t.Fatal(err)
		}
		if i := firstDifference(inOrder, atOnce); i >= 0 {
			t.Fatalf("%s: request %d decided %v on 8 goroutines, %v in order", name, i, atOnce[i], inOrder[i])
		}
		if s.late.Load() {
			t.Errorf("%s: a key's requests reached the store out of order", name)
		}
		if s.most.Load() < 2 {
			t.Errorf("%s: at most %d decision in flight on 8 goroutines", name, s.most.Load())
		}
	}
}

// concurrency is a Redis hook that records how many commands were in
// flight at once.
type concurrency struct{ now, most atomic.Int64 }

func (c *concurrency) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *concurrency) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		n := c.now.Add(1)
		defer c.now.Add(-1)
		for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
		}
		return next(ctx, cmd)
	}
}
func (c *concurrency) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// On a real Redis a run replays many keys at once, not one round trip
// after another, and still makes the memory store's decisions (Compare
// checks every one) in one round trip each, uncoalesced.
func TestRedisReplaysKeysAtOnce(t *testing.T) {
	ctx := context.Background()
	r, err := DialRedis(ctx, redistest.Standalone(t).Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var c concurrency
	r.client.AddHook(&c)
	w, err := workload.Custom(
		workload.Spec{Limit: workload.Limit{Count: 10, Window: time.Minute}, Rate: 0.5, Shape: "bursts",
			On: 10 * time.Second, Off: 20 * time.Second, Duration: 3 * time.Minute, Keys: 64, Seed: 1},
	)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(
		ctx,
		Config{
			Workloads:  []*workload.Workload{w},
			Algorithms: []string{"sliding_log", "gcra"},
			Targets:    []Target{Memory{}, r},
		},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.most.Load(); got < 2 {
		t.Errorf("at most %d command in flight: the keys were replayed one after another", got)
	}
	for _, row := range rep.Rows {
		s := row.Stores[1]
		if s.RoundTripsPerDecision < 1 || s.RoundTripsPerDecision > 1.01 {
			t.Errorf("%s: %.3f round trips per decision, want 1 (no coalescing)", row.Algorithm, s.RoundTripsPerDecision)
		}
		if s.KeysHeld < 1 || s.KeysHeld > MaxSampledKeys {
			t.Errorf("%s: memory measured over %d keys", row.Algorithm, s.KeysHeld)
		}
	}
}

// The README's example, compare --workload custom --rate 300/min --shape
// bursts --keys 100 --duration 5m with the default limit of 100 per minute,
// must show
// the algorithms apart: bursts of 300 in 10 seconds, every minute from each
// key's own offset, are denied in part, and not alike by every algorithm.
func TestREADMEBurstsExampleTellsAlgorithmsApart(t *testing.T) {
	w, err := workload.Custom(workload.Spec{Limit: workload.DefaultLimit, Rate: 300.0 / 60, Shape: "bursts",
		On: 10 * time.Second, Off: 50 * time.Second, Duration: 5 * time.Minute, Keys: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	admitted := map[int64][]string{}
	for _, name := range AlgorithmNames {
		alg, err := Configure(name, w.Limit, w.Window, Options{})
		if err != nil {
			t.Fatal(err)
		}
		acc, err := Replay(context.Background(), storememory.New(), w, alg)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Denied == 0 {
			t.Errorf("%s denied nothing: bursts of 300 a minute against 100 per minute", name)
		}
		admitted[acc.Admitted] = append(admitted[acc.Admitted], name)
	}
	if len(admitted) < 2 {
		t.Errorf("every algorithm admitted the same: %v", admitted)
	}
}

// The boundary attack straddles a fixed window's boundary whatever the
// window, so that a fixed window admits twice its limit on it, also for
// windows that do not divide a day and so do not start at the trace's
// Start.
func TestBoundaryAttackStraddlesAFixedWindowBoundary(t *testing.T) {
	for _, window := range []time.Duration{time.Minute, 7 * time.Second, 720 * time.Hour} {
		l := workload.Limit{Count: 50, Window: window}
		w, err := workload.Boundary(l, 2)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := Replay(
			context.Background(),
			storememory.New(),
			w,
			algorithms.FixedWindow{Limit: l.Count, Window: l.Window},
		)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Overshoot != 2 {
			t.Errorf("window %v: the fixed window reached %.2f× on the boundary attack, want 2.00×", window, acc.Overshoot)
		}
	}
}
