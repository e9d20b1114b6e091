package storeredis_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// replicated is a throwaway master and its replica, and a client of each.
type replicated struct {
	master, replica *redistest.Server
	mc, rc          *redis.Client
}

// startReplicated starts a master and a replica of it, and waits until the
// master counts the replica online, so that WAIT counts it. The master
// starts a full sync at once (repl-diskless-sync-delay 0), where Redis's
// default waits 5 s for more replicas to share it.
func startReplicated(t testing.TB) *replicated {
	t.Helper()
	redistest.Require(t)
	master, err := redistest.Start("repl-diskless-sync-delay 0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(master.Stop)
	host, port, _ := strings.Cut(master.Addr, ":")
	replica, err := redistest.Start("replicaof " + host + " " + port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(replica.Stop)
	r := &replicated{master: master, replica: replica, mc: newClient(t, master.Addr), rc: newClient(t, replica.Addr)}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.mc.Info(context.Background(), "replication").Result()
		if err == nil && redisinfo.Field(info, "connected_slaves") == "1" &&
			strings.Contains(redisinfo.Field(info, "slave0"), "state=online") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica %s did not come online within 10s: %q, %v", replica.Addr, info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// holdReplication stops the replica applying what its master sends, for d:
// CLIENT PAUSE WRITE holds back its master's link too, whose stream is
// writes. The replica acknowledges nothing meanwhile.
func (r *replicated) holdReplication(t testing.TB, d time.Duration) {
	t.Helper()
	if err := r.rc.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.rc.Do(context.Background(), "CLIENT", "UNPAUSE") })
}

// waitCalls is how many WAITs the master has answered since stats were last
// reset.
func (r *replicated) waitCalls(t testing.TB) int64 {
	t.Helper()
	stats, err := redisinfo.CommandStats(context.Background(), r.mc)
	if err != nil {
		t.Fatal(err)
	}
	return stats["wait"].Calls
}

// TestReplicasWaitForTheReplica: with WithReplicas(1, ...), each write the
// store makes (a decision, one with the caller's request ID, a set's, a
// booking, a refund, a reset) returns only once the replica has applied
// it. The replica is held back for 150 ms before each, so a write that did
// not wait would return before the replica has it: right after each call,
// without waiting, the replica's copy of every key the write touched is the
// master's.
func TestReplicasWaitForTheReplica(t *testing.T) {
	r := startReplicated(t)
	s := storeredis.New(r.mc, storeredis.WithReplicas(1, 5*time.Second))
	ctx := context.Background()
	gcra := algorithms.GCRA{Rate: algorithms.PerMinute(10), Burst: 10}
	window := algorithms.FixedWindow{Limit: 20, Window: time.Hour}
	admit := func(t *testing.T, key string) algorithms.Result {
		res, err := s.Decide(ctx, store.Key{Name: key}, gcra, time.Time{}, 1)
		if err != nil || !res.Allowed {
			t.Fatalf("the admission before the write: %+v, %v", res, err)
		}
		return res
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, key string) algorithms.Result // runs before the replica is held back
		write   func(key string, prepared algorithms.Result) error
		keys    []algorithms.Algorithm // whose state the write touches
	}{
		{"decision", nil, func(key string, _ algorithms.Result) error {
			_, err := s.Decide(ctx, store.Key{Name: key}, gcra, time.Time{}, 1)
			return err
		}, []algorithms.Algorithm{gcra}},
		{"decision with request ID", nil, func(key string, _ algorithms.Result) error {
			_, err := s.Decide(ratewise.WithRequestID(ctx, ratewise.NewRequestID()), store.Key{Name: key}, gcra, time.Time{}, 1)
			return err
		}, []algorithms.Algorithm{gcra}},
		{"set", nil, func(key string, _ algorithms.Result) error {
			_, err := s.DecideSet(ctx, store.Key{Name: key}, []algorithms.Algorithm{gcra, window}, time.Time{}, 1)
			return err
		}, []algorithms.Algorithm{gcra, window}},
		{"booking", nil, func(key string, _ algorithms.Result) error {
			_, _, err := s.Reserve(ctx, store.Key{Name: key}, gcra, time.Time{}, 1, time.Minute)
			return err
		}, []algorithms.Algorithm{gcra}},
		{"refund", admit, func(key string, admitted algorithms.Result) error {
			_, err := s.Refund(ctx, store.Key{Name: key}, gcra, time.Time{}, admitted.At, 1)
			return err
		}, []algorithms.Algorithm{gcra}},
		{"reset", admit, func(key string, _ algorithms.Result) error {
			return s.Reset(ctx, store.Key{Name: key}, gcra)
		}, []algorithms.Algorithm{gcra}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(t)
			var prepared algorithms.Result
			if tc.prepare != nil {
				prepared = tc.prepare(t, key)
			}
			before := make([]string, len(tc.keys))
			for i, alg := range tc.keys {
				before[i] = r.rc.Dump(ctx, s.Key(key, alg)).Val()
			}
			r.holdReplication(t, 150*time.Millisecond)
			if err := tc.write(key, prepared); err != nil {
				t.Fatalf("the write failed: %v", err)
			}
			for i, alg := range tc.keys {
				rkey := s.Key(key, alg)
				onReplica := r.rc.Dump(ctx, rkey).Val()
				if want := r.mc.Dump(ctx, rkey).Val(); onReplica != want {
					t.Errorf(
						"%s: right after the write returned, the replica's copy differs from the master's (%q, want %q)",
						rkey,
						onReplica,
						want,
					)
				}
				if onReplica == before[i] {
					t.Errorf("%s: the write changed nothing on the replica", rkey)
				}
			}
		})
	}
}

// TestReplicasNotReplicated: when fewer replicas than WithReplicas asks
// for acknowledge a decision in time (two asked of one replica, or the
// replica held back for longer than the timeout), the decision returns
// after the timeout, rounded up to the millisecond and at least 1 ms, with
// the zero Result and an error wrapping ErrNotReplicated,
// store.ErrUnavailable and store.ErrMaybeDecided, never an admission; the
// charge stands on the master. Retried with its request ID once the replica
// is back, it gets its first outcome and charges nothing more.
func TestReplicasNotReplicated(t *testing.T) {
	r := startReplicated(t)
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10}
	inspect := storeredis.New(r.mc)
	for _, tc := range []struct {
		name    string
		n       int
		timeout time.Duration
		hold    time.Duration // how long the replica is held back, if at all
		wait    time.Duration // what the error says was waited
	}{
		{"two of one replica", 2, 100 * time.Millisecond, 0, 100 * time.Millisecond},
		{"timeout rounded up", 2, 1500 * time.Microsecond, 0, 2 * time.Millisecond},
		{"no timeout is 1ms", 2, 0, 0, time.Millisecond},
		{"replica held back", 1, 100 * time.Millisecond, 400 * time.Millisecond, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(t)
			s := storeredis.New(r.mc, storeredis.WithReplicas(tc.n, tc.timeout))
			if tc.hold > 0 {
				r.holdReplication(t, tc.hold)
			}
			id := ratewise.NewRequestID()
			start := time.Now()
			res, err := s.Decide(ratewise.WithRequestID(ctx, id), store.Key{Name: key}, alg, time.Time{}, 1)
			elapsed := time.Since(start)
			if res != (algorithms.Result{}) {
				t.Errorf("a decision too few replicas acknowledged returned a Result: %+v", res)
			}
			for _, want := range []error{storeredis.ErrNotReplicated, store.ErrUnavailable, store.ErrMaybeDecided} {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %q", err, want)
				}
			}
			if err != nil &&
				!strings.Contains(err.Error(), fmt.Sprintf("of %d replicas acknowledged it within %v", tc.n, tc.wait)) {
				t.Errorf("error %q does not name the count and the wait of %v", err, tc.wait)
			}
			if elapsed < tc.wait || elapsed > tc.wait+time.Second {
				t.Errorf("the decision returned after %v, want about its wait of %v", elapsed, tc.wait)
			}
			if got, err := inspect.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 0); err != nil || got.Remaining != 9 {
				t.Fatalf("on the master after the failed wait: %+v, %v; want 9 remaining (the charge stands)", got, err)
			}
			if tc.hold == 0 {
				return
			}
			// The retry may come from any app server: a store that waits
			// long enough for the replica to catch up on a loaded machine.
			r.rc.Do(ctx, "CLIENT", "UNPAUSE")
			retry := storeredis.New(r.mc, storeredis.WithReplicas(1, 5*time.Second))
			again, err := retry.Decide(ratewise.WithRequestID(ctx, id), store.Key{Name: key}, alg, time.Time{}, 1)
			if err != nil || !again.Allowed || again.Remaining != 9 {
				t.Errorf(
					"the retry with the request ID once the replica is back: %+v, %v; want the first outcome, admitted with "+
						"9 remaining",
					again,
					err,
				)
			}
			if got, err := inspect.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 0); err != nil || got.Remaining != 9 {
				t.Errorf("after the retry: %+v, %v; want 9 remaining (charged once)", got, err)
			}
		})
	}
}

// TestReplicasReplayWaits: a write sent again with its request ID, which
// Redis already applied, waits for the replica as the first did, although
// it replays a kept reply: from another app server's connection, which has
// written nothing WAIT could count, a decision and a reset retried while
// the replica is held back fail with ErrNotReplicated, and succeed once it
// is back.
func TestReplicasReplayWaits(t *testing.T) {
	r := startReplicated(t)
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10}
	for _, tc := range []struct {
		name  string
		write func(s *storeredis.Store, ctx context.Context, key string) error
	}{
		{"decision", func(s *storeredis.Store, ctx context.Context, key string) error {
			_, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
			return err
		}},
		{"reset", func(s *storeredis.Store, ctx context.Context, key string) error {
			return s.Reset(ctx, store.Key{Name: key}, alg)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(t)
			if _, err := storeredis.New(r.mc).Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil {
				t.Fatal(err)
			}
			withID := ratewise.WithRequestID(ctx, ratewise.NewRequestID())
			r.holdReplication(t, 2*time.Second)
			first := storeredis.New(r.mc, storeredis.WithReplicas(1, 100*time.Millisecond))
			if err := tc.write(first, withID, key); !errors.Is(err, storeredis.ErrNotReplicated) {
				t.Fatalf("the write while the replica is held back: %v, want ErrNotReplicated", err)
			}
			other := storeredis.New(newClient(t, r.master.Addr), storeredis.WithReplicas(1, 100*time.Millisecond))
			if err := tc.write(other, withID, key); !errors.Is(err, storeredis.ErrNotReplicated) {
				t.Fatalf(
					"the write sent again from another connection, the replica still held back: %v, want ErrNotReplicated",
					err,
				)
			}
			r.rc.Do(ctx, "CLIENT", "UNPAUSE")
			again := storeredis.New(newClient(t, r.master.Addr), storeredis.WithReplicas(1, 5*time.Second))
			if err := tc.write(again, withID, key); err != nil {
				t.Fatalf("the write sent again once the replica is back: %v", err)
			}
		})
	}
}

// TestReplicasDecisionsGoAlone: with WithReplicas, 32 concurrent decisions
// are not coalesced, and each is followed by a WAIT of its own, where a
// coalesced batch would go without; WithReplicas(0, ...) sends no WAIT.
func TestReplicasDecisionsGoAlone(t *testing.T) {
	r := startReplicated(t)
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1000), Burst: 1000}
	for _, tc := range []struct {
		name  string
		n     int
		waits int64
	}{
		{"on", 1, 32},
		{"off", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storeredis.New(r.mc, storeredis.WithReplicas(tc.n, time.Second))
			key := testKey(t)
			// The script is cached first: a NOSCRIPT sends it again, with
			// a second WAIT.
			if _, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil {
				t.Fatal(err)
			}
			if err := r.mc.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			for range 32 {
				wg.Go(func() {
					if _, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if got := r.waitCalls(t); got != tc.waits {
				t.Errorf("32 decisions sent %d WAITs, want %d", got, tc.waits)
			}
		})
	}
}

// TestReplicasUnsupportedClient: with a client that is neither a
// *redis.Client nor a *redis.ClusterClient, every write fails with
// store.ErrUnsupported, and not store.ErrUnavailable: retrying will not
// help.
func TestReplicasUnsupportedClient(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": redistest.Standalone(t).Addr}})
	t.Cleanup(func() { ring.Close() })
	s := storeredis.New(ring, storeredis.WithReplicas(1, time.Second))
	alg := algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10}
	res, err := s.Decide(context.Background(), store.Key{Name: testKey(t)}, alg, time.Time{}, 1)
	if !errors.Is(err, store.ErrUnsupported) || errors.Is(err, store.ErrUnavailable) || res != (algorithms.Result{}) {
		t.Fatalf(
			"a decision on a Ring with WithReplicas: %+v, %v; want the zero Result and store.ErrUnsupported alone",
			res,
			err,
		)
	}
	if err := s.Reset(context.Background(), store.Key{Name: testKey(t)}, alg); !errors.Is(err, store.ErrUnsupported) {
		t.Fatalf("a reset on a Ring with WithReplicas: %v; want store.ErrUnsupported", err)
	}
}

// TestReplicasClusterMoved: on a cluster, a write goes to the key's master
// as the client's slot map has it. With a stale map, the master answers
// MOVED: the decision fails with store.ErrUnavailable (the script did not
// run, so nothing says it was not replicated), and the client reloads its
// map, after which the decision reaches the right master. The shared
// cluster has no replicas, so there the script runs and WAIT counts none:
// ErrNotReplicated shows the decision reached its master.
func TestReplicasClusterMoved(t *testing.T) {
	cl := redistest.SharedCluster(t)
	ctx := context.Background()
	c := newClient(t, cl.Servers[0].Addr)
	slots, err := c.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The first load of the map puts every slot on the first master; later
	// ones are the cluster's own.
	var mu sync.Mutex
	loads := 0
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Addrs(),
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			mu.Lock()
			defer mu.Unlock()
			loads++
			if loads == 1 {
				return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: cl.Servers[0].Addr}}}}, nil
			}
			return slots, nil
		},
	})
	t.Cleanup(func() { rdb.Close() })
	s := storeredis.New(rdb, storeredis.WithReplicas(1, time.Millisecond))
	alg := algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10}
	// A key the first master does not serve.
	var key string
	for i := 0; key == ""; i++ {
		k := fmt.Sprintf("%s:%d", testKey(t), i)
		slot, err := c.ClusterKeySlot(ctx, s.Key(k, alg)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ownerOf(slots, slot) != cl.Servers[0].Addr {
			key = k
		}
	}
	res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
	if !errors.Is(err, store.ErrUnavailable) || errors.Is(err, storeredis.ErrNotReplicated) ||
		!strings.Contains(err.Error(), "MOVED") ||
		res != (algorithms.Result{}) {
		t.Fatalf(
			"a decision sent to a master that moved the slot: %+v, %v; want the zero Result and store.ErrUnavailable for MOVED",
			res,
			err,
		)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		_, err = s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
		if errors.Is(err, storeredis.ErrNotReplicated) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf(
				"2s after MOVED, the decision still fails with %v; want it to reach its master (ErrNotReplicated with no replicas)",
				err,
			)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownerOf returns the address of the master that slots gives slot to.
func ownerOf(slots []redis.ClusterSlot, slot int64) string {
	for _, s := range slots {
		if int64(s.Start) <= slot && slot <= int64(s.End) {
			return s.Nodes[0].Addr
		}
	}
	return ""
}

// BenchmarkReplicas measures what waiting for a replica costs a decision:
// GCRA admissions on a master with one replica, both on this machine,
// without WithReplicas (the defaults) and with WithReplicas(1, 100ms),
// one caller at a time and from GOMAXPROCS callers at once, each on a key
// of its own. Without the option, parallel callers share round trips
// (coalescing); with it, each decision goes alone with its WAIT.
//
//	go test -run '^$' -bench BenchmarkReplicas -count 5 ./storeredis
func BenchmarkReplicas(b *testing.B) {
	r := startReplicated(b)
	// Decisions come faster than 100 a second and spend the burst, which
	// they never exhaust, so each key lives on (its TTL grows 10 ms a
	// decision) and can be counted at the end.
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(100), Burst: 1000000000}
	for _, mode := range []string{"serial", "parallel"} {
		for _, bc := range []struct {
			name string
			opts []storeredis.Option
		}{
			{"replicas=0", nil},
			{"replicas=1", []storeredis.Option{storeredis.WithReplicas(1, 100*time.Millisecond)}},
		} {
			b.Run("mode="+mode+"/"+bc.name, func(b *testing.B) {
				s := storeredis.New(r.mc, append([]storeredis.Option{storeredis.WithDenyCache(0)}, bc.opts...)...)
				ctx := context.Background()
				b.ReportAllocs()
				var mu sync.Mutex
				keys := map[string]bool{}
				if mode == "serial" {
					key := "bench:" + runID + ":" + bc.name + ":serial"
					keys[key] = true
					for b.Loop() {
						if res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil || !res.Allowed {
							b.Fatalf("%+v, %v", res, err)
						}
					}
				} else {
					n := 0
					b.RunParallel(func(pb *testing.PB) {
						mu.Lock()
						key := fmt.Sprintf("bench:%s:%s:parallel:%d", runID, bc.name, n)
						n++
						mu.Unlock()
						for pb.Next() {
							if res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil || !res.Allowed {
								b.Errorf("%+v, %v", res, err)
								return
							}
							mu.Lock()
							keys[key] = true
							mu.Unlock()
						}
					})
				}
				// Every caller decided on a key of its own (a parallel
				// caller may get no iteration of a short run), which with
				// the option has reached the replica.
				if len(keys) < 1 || len(keys) > runtime.GOMAXPROCS(0) {
					b.Fatalf("decisions on %d keys, want 1 to GOMAXPROCS (%d)", len(keys), runtime.GOMAXPROCS(0))
				}
				for key := range keys {
					c := r.mc
					if bc.opts != nil {
						c = r.rc
					}
					if n, err := c.Exists(ctx, s.Key(key, alg)).Result(); err != nil || n != 1 {
						b.Fatalf("key %s is not on %s: %d, %v", key, c.Options().Addr, n, err)
					}
				}
			})
		}
	}
}
