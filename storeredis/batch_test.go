package storeredis_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDifferentialBatches sends random batches, as concurrent decisions are
// coalesced, each interleaving several keys of every kind (a key may come
// many times in one batch), with times forward, equal and stale, costs up to
// the limit and inspections, and limits that change, and requires each
// decision's Result to be what the Go step gives when the batch's decisions
// run one after another in order. One decision in some batches is on a key
// holding a list: it alone must fail, with store.ErrUnavailable. On the
// cluster, a batch spans many hash slots.
func TestDifferentialBatches(t *testing.T) {
	targets := []struct {
		name   string
		client func(t *testing.T) redis.Scripter
	}{
		{"redis", func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) }},
		{"miniredis", func(t *testing.T) redis.Scripter { return newClient(t, miniredis.RunT(t).Addr()) }},
		{"cluster", func(t *testing.T) redis.Scripter {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
	}
	const batches, sequencesPerBatch, stepsPerSequence = 80, 8, 16 // 10,240 decisions (on miniredis 2,560)
	for ti, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			ctx := context.Background()
			client := target.client(t)
			s := storeredis.New(client, storeredis.WithClientTime())
			rng := rand.New(rand.NewPCG(uint64(ti), 7))
			kinds := algorithms.Kinds()
			foreignFailed := 0
			for b := range sequencesOn(target.name, batches) {
				type sequence struct {
					key     string
					alg     algorithms.Algorithm
					relimit func() algorithms.Algorithm
					now     time.Time
					state   algo.State
					left    int
				}
				var seqs []*sequence
				for i := range sequencesPerBatch {
					lim := difftest.Scope(rng, kinds[rng.IntN(len(kinds))])
					start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC).
						Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond)
					seqs = append(
						seqs,
						&sequence{
							key:     fmt.Sprintf("%s:%d:%d", testKey(t), b, i),
							alg:     lim.Alg,
							relimit: lim.Relimit,
							now:     start,
							left:    stepsPerSequence,
						},
					)
				}
				var ds []storeredis.BatchDecision
				var want []algorithms.Result
				foreign := -1
				if b%4 == 0 {
					// A key of another type, which every script fails on.
					alg := seqs[0].alg
					key := fmt.Sprintf("%s:%d:foreign", testKey(t), b)
					lpush(t, client, s.Key(key, alg))
					foreign = 0
					ds = append(ds, storeredis.BatchDecision{Key: key, Alg: alg, Now: seqs[0].now, Cost: 1})
					want = append(want, algorithms.Result{})
				}
				for left := sequencesPerBatch * stepsPerSequence; left > 0; left-- {
					var q *sequence
					for q == nil || q.left == 0 {
						q = seqs[rng.IntN(len(seqs))]
					}
					q.left--
					scale := difftest.Scale(q.alg)
					switch r := rng.IntN(10); {
					case r == 0:
						q.now = q.now.Add(-time.Duration(rng.Int64N(int64(scale))).Truncate(time.Microsecond)) // stale
					case r == 1: // the same microsecond
					default:
						q.now = q.now.Add(
							time.Duration(rng.Int64N(max(int64(scale)/max(algo.MaxCost(q.alg), 1)*2, 1))).Truncate(time.Microsecond),
						)
					}
					q.now = maxTime(q.now, time.Unix(0, 0))
					if rng.IntN(30) == 0 {
						q.alg = q.relimit()
					}
					cost := rng.Int64N(min(algo.MaxCost(q.alg), 3) + 1)
					switch rng.IntN(5) {
					case 0:
						cost = 1 + rng.Int64N(algo.MaxCost(q.alg))
					case 1:
						cost = -1 - rng.Int64N(algo.MaxCost(q.alg))
					}
					var res algorithms.Result
					q.state, res = algo.Decide(q.alg, q.state, q.now, cost)
					ds = append(ds, storeredis.BatchDecision{Key: q.key, Alg: q.alg, Now: q.now, Cost: cost})
					want = append(want, res)
				}
				got, errs := storeredis.DecideBatch(ctx, s, ds)
				for i := range ds {
					if foreign >= 0 && i == 0 {
						if !errors.Is(errs[i], store.ErrUnavailable) || !strings.Contains(errs[i].Error(), "WRONGTYPE") {
							t.Fatalf(
								"batch %d: the decision on a list returned %+v, %v; want store.ErrUnavailable with Redis's WRONGTYPE",
								b,
								got[i],
								errs[i],
							)
						}
						foreignFailed++
						continue
					}
					if errs[i] != nil {
						t.Fatalf(
							"batch %d, decision %d (%v cost %d at %s): %v",
							b,
							i,
							ds[i].Alg,
							ds[i].Cost,
							ds[i].Now.Format(time.RFC3339Nano),
							errs[i],
						)
					}
					if got[i] != want[i] {
						t.Fatalf(
							"batch %d, decision %d (%#v cost %d at %s):\n  lua %+v\n  go  %+v",
							b,
							i,
							ds[i].Alg,
							ds[i].Cost,
							ds[i].Now.Format(time.RFC3339Nano),
							got[i],
							want[i],
						)
					}
				}
			}
			if foreignFailed == 0 {
				t.Fatal("no batch held a foreign key")
			}
		})
	}
}

func lpush(t *testing.T, c redis.Scripter, key string) {
	t.Helper()
	if err := c.Eval(context.Background(), `return redis.call('LPUSH', KEYS[1], 'x')`, []string{key}).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestCoalescedDecisionsAreExact has 64 callers share one key whose limit
// is 500, with coalescing's threshold at one decision in flight, so that
// nearly every decision is batched: exactly 500 are admitted, every caller
// gets a Result of its own, and the decisions take fewer round trips than
// there are decisions.
func TestCoalescedDecisionsAreExact(t *testing.T) {
	for _, target := range []struct {
		name   string
		client func(t *testing.T) redis.Scripter
		trips  func(redis.Scripter) *redistest.RoundTrips
	}{
		{"redis", func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) },
			func(c redis.Scripter) *redistest.RoundTrips { return redistest.CountRoundTrips(c.(*redis.Client)) }},
		{"cluster", func(t *testing.T) redis.Scripter {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		}, func(c redis.Scripter) *redistest.RoundTrips {
			return redistest.CountRoundTrips(c.(*redis.ClusterClient))
		}},
	} {
		t.Run(target.name, func(t *testing.T) {
			client := target.client(t)
			trips := target.trips(client)
			s := storeredis.New(client, storeredis.WithCoalescing(1))
			alg := algorithms.FixedWindow{Limit: 500, Window: time.Hour}
			key := testKey(t)
			const callers, each = 64, 20
			var admitted, decisions atomic.Int64
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for range each {
						res, err := s.Decide(context.Background(), store.Key{Name: key}, alg, time.Now(), 1)
						if err != nil {
							t.Error(err)
							return
						}
						decisions.Add(1)
						if res.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if got := admitted.Load(); got != 500 {
				t.Fatalf("%d admitted, want exactly 500", got)
			}
			if n, rt := decisions.Load(), trips.Load(); rt >= n {
				t.Fatalf("%d decisions took %d round trips: nothing was coalesced", n, rt)
			} else {
				t.Logf("%d decisions in %d round trips", n, rt)
			}
		})
	}
}

// TestCoalescedFailureReachesEveryCaller sends batches to a Redis that
// was stopped: every caller gets store.ErrUnavailable, none a decision.
func TestCoalescedFailureReachesEveryCaller(t *testing.T) {
	srv, err := redistest.Start()
	if err != nil {
		redistest.Require(t)
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	s := storeredis.New(c, storeredis.WithCoalescing(1))
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10}
	if _, err := s.Decide(context.Background(), store.Key{Name: "warm"}, alg, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	ds := []storeredis.BatchDecision{
		{Key: "a", Alg: alg, Cost: 1},
		{Key: "b", Alg: algorithms.FixedWindow{Limit: 1, Window: time.Second}, Cost: 1},
		{Key: "a", Alg: alg, Cost: 1},
	}
	res, errs := storeredis.DecideBatch(context.Background(), s, ds)
	for i := range ds {
		if !errors.Is(errs[i], store.ErrUnavailable) || res[i] != (algorithms.Result{}) {
			t.Errorf("decision %d: %+v, %v; want store.ErrUnavailable and no Result", i, res[i], errs[i])
		}
	}
	var wg sync.WaitGroup
	var unavailable atomic.Int64
	for range 16 {
		wg.Go(func() {
			res, err := s.Decide(context.Background(), store.Key{Name: "k"}, alg, time.Now(), 1)
			if errors.Is(err, store.ErrUnavailable) && !res.Allowed {
				unavailable.Add(1)
			} else {
				t.Errorf("%+v, %v; want store.ErrUnavailable", res, err)
			}
		})
	}
	wg.Wait()
	if unavailable.Load() != 16 {
		t.Fatalf("%d of 16 callers got store.ErrUnavailable", unavailable.Load())
	}
}

// TestQueuedCallerHonoursItsContext stalls Redis with CLIENT PAUSE while one
// decision is in flight: a caller queued behind it returns with its own
// context's error when that ends, not when Redis answers.
func TestQueuedCallerHonoursItsContext(t *testing.T) {
	srv, err := redistest.Start() // its own, since it is paused
	if err != nil {
		redistest.Require(t)
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	admin := newClient(t, srv.Addr)
	s := storeredis.New(newClient(t, srv.Addr), storeredis.WithCoalescing(1))
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10}
	ctx := context.Background()
	if _, err := s.Decide(ctx, store.Key{Name: testKey(t)}, alg, time.Now(), 1); err != nil { // loads the script
		t.Fatal(err)
	}
	if err := admin.Do(ctx, "CLIENT", "PAUSE", 600).Err(); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() {
		_, err := s.Decide(ctx, store.Key{Name: testKey(t)}, alg, time.Now(), 1)
		first <- err
	}()
	time.Sleep(20 * time.Millisecond) // the first decision is in flight
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = s.Decide(short, store.Key{Name: testKey(t)}, alg, time.Now(), 1)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the queued caller got %v, want its context's deadline", err)
	}
	if took > 300*time.Millisecond {
		t.Fatalf("the queued caller returned after %v, past its 50ms deadline", took)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestCoalescedStallStaysOnItsNode pauses one master of a cluster (CLIENT
// PAUSE) and queues decisions on its keys until they hold every goroutine
// that sends its queued decisions: decisions on the other masters' keys,
// which queue too, since one decision on the paused master is in flight
// alone at the limit of WithCoalescing(1), are decided within a bound far
// below the pause.
func TestCoalescedStallStaysOnItsNode(t *testing.T) {
	const (
		pause = time.Second
		bound = 250 * time.Millisecond
	)
	cl := redistest.SharedCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { cc.Close() })
	s := storeredis.New(cc, storeredis.WithCoalescing(1))
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(100_000), Burst: 100_000}
	ctx := context.Background()
	paused := cl.Servers[0].Addr
	var stalledKeys, liveKeys []string
	liveMasters := map[string]bool{}
	for i := 0; len(stalledKeys) < 3 || len(liveKeys) < 16; i++ {
		key := fmt.Sprintf("%s:%d", testKey(t), i)
		node, err := cc.MasterForKey(ctx, s.Key(key, alg))
		if err != nil {
			t.Fatal(err)
		}
		switch addr := node.Options().Addr; {
		case addr == paused && len(stalledKeys) < 3:
			stalledKeys = append(stalledKeys, key)
		case addr != paused && len(liveKeys) < 16:
			liveKeys = append(liveKeys, key)
			liveMasters[addr] = true
		}
	}
	for _, key := range append(stalledKeys, liveKeys...) { // loads the script everywhere
		if _, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1); err != nil {
			t.Fatal(err)
		}
	}

	if err := newClient(t, paused).Do(ctx, "CLIENT", "PAUSE", pause.Milliseconds()).Err(); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	var stalledDone atomic.Int64
	stalled := make(chan error, len(stalledKeys))
	t.Cleanup(func() {
		for range stalledKeys {
			if err := <-stalled; err != nil {
				t.Errorf("a decision on the paused master: %v", err)
			}
		}
	})
	decideStalled := func(key string, until string, ready func(alone, queued, senders int) bool) {
		go func() {
			_, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
			stalledDone.Add(1)
			stalled <- err
		}()
		for start := time.Now(); ; time.Sleep(time.Millisecond) {
			alone, queued, senders := storeredis.Coalescing(s)
			if ready(alone, queued, senders) {
				return
			}
			if time.Since(start) > pause/4 {
				t.Fatalf(
					"the paused master's decisions did not reach %s: alone=%d queued=%d senders=%d",
					until,
					alone,
					queued,
					senders,
				)
			}
		}
	}
	decideStalled(stalledKeys[0], "one in flight alone", func(alone, queued, senders int) bool { return alone == 1 })
	decideStalled(
		stalledKeys[1],
		"one sender",
		func(alone, queued, senders int) bool { return senders == 1 && queued == 0 },
	)
	decideStalled(
		stalledKeys[2],
		"two senders",
		func(alone, queued, senders int) bool { return senders == 2 && queued == 0 },
	)

	const each = 8
	var slowest atomic.Int64
	var wg sync.WaitGroup
	for _, key := range liveKeys {
		wg.Go(func() {
			for range each {
				start := time.Now()
				_, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
				took := time.Since(start)
				if err != nil {
					t.Errorf("a decision on a live master: %v", err)
					return
				}
				for old := slowest.Load(); int64(took) > old && !slowest.CompareAndSwap(old, int64(took)); old = slowest.Load() {
				}
			}
		})
	}
	wg.Wait()
	live := time.Since(pausedAt)
	alone, _, _ := storeredis.Coalescing(s)
	t.Logf(
		"%d decisions on %d live masters' keys in %v of a %v pause, the slowest %v (bound %v)",
		len(
			liveKeys,
		)*each,
		len(liveMasters),
		live.Round(time.Millisecond),
		pause,
		time.Duration(slowest.Load()).Round(time.Microsecond),
		bound,
	)
	if got := time.Duration(slowest.Load()); got > bound {
		t.Fatalf("a decision on a live master's key took %v while another master was paused, want at most %v", got, bound)
	}
	if n := stalledDone.Load(); n > 0 || alone != 1 {
		t.Fatalf(
			"%d decisions on the paused master returned and %d were in flight alone by the end, want 0 and 1: the "+
				"pause did not cover the live decisions",
			n,
			alone,
		)
	}
}
