package storeredis_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDifferentialSetBatches sends random batches of sets' decisions, as
// concurrent DecideSet calls are coalesced (difftest.SetBatches: several
// subjects, lists of kinds and changed limits interleaved in each batch),
// and requires each set's Results to be what the Go steps give when the
// batch's sets are decided one after another in order: on Redis, on
// miniredis, and on the cluster, where a batch spans hash slots.
func TestDifferentialSetBatches(t *testing.T) {
	targets := map[string]func(t *testing.T) redis.Scripter{
		"redis":     scriptTargets["redis"],
		"miniredis": scriptTargets["miniredis"],
		"cluster": func(t *testing.T) redis.Scripter {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for name, client := range targets {
		t.Run(name, func(t *testing.T) {
			s := storeredis.New(client(t), storeredis.WithClientTime())
			batcher := func(ctx context.Context, batch []difftest.SetDecision) ([][]algorithms.Result, []error) {
				sets := make([]storeredis.BatchSet, len(batch))
				for i, d := range batch {
					sets[i] = storeredis.BatchSet{Key: d.Key, Algs: d.Algs, Now: d.Now, Cost: d.Cost}
				}
				return storeredis.DecideSetBatch(ctx, s, sets)
			}
			difftest.SetBatches(t, batcher, testKey(t), sequencesOn(name, 20))
		})
	}
}

// TestSetBatchForeignKeyFailsAlone sends a batch of sets of one list of
// kinds, so one script call, in which one set's second limit is on a key
// holding a list: that set alone fails, with store.ErrUnavailable and
// Redis's WRONGTYPE, and writes nothing, and the sets before and after it,
// one on the same subject as a set before it, are decided as the Go steps
// decide them.
func TestSetBatchForeignKeyFailsAlone(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			c := client(t)
			s := storeredis.New(c, storeredis.WithClientTime())
			ms := storememory.New()
			set := []algorithms.Algorithm{
				algorithms.GCRA{Rate: algorithms.PerMinute(3), Burst: 3},
				algorithms.SlidingLog{Limit: 2, Window: time.Minute},
			}
			key := fmt.Sprint(testKey(t), ":", time.Now().UnixNano()) // a server outlives a run under -count
			foreign := key + ":foreign"
			lpush(t, c, s.Key(foreign, set[1]))
			now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			batch := []storeredis.BatchSet{
				{Key: key, Algs: set, Now: now, Cost: 1},
				{Key: foreign, Algs: set, Now: now, Cost: 1},
				{Key: key + ":other", Algs: set, Now: now, Cost: 2},
				{Key: key, Algs: set, Now: now.Add(time.Second), Cost: 1},
				{Key: key, Algs: set, Now: now.Add(2 * time.Second), Cost: 1},
			}
			got, errs := storeredis.DecideSetBatch(ctx, s, batch)
			for i, d := range batch {
				if d.Key == foreign {
					if !errors.Is(errs[i], store.ErrUnavailable) || !strings.Contains(errs[i].Error(), "WRONGTYPE") || got[i] != nil {
						t.Fatalf("the set on a list returned %+v, %v; want store.ErrUnavailable with Redis's WRONGTYPE", got[i], errs[i])
					}
					if n, err := c.(redis.Cmdable).Exists(ctx, s.Key(foreign, set[0])).Result(); err != nil || n != 0 {
						t.Fatalf("the failed set's first limit's state exists (%d, %v): it wrote before it failed", n, err)
					}
					continue
				}
				want, err := ms.DecideSet(ctx, store.Key{Name: d.Key}, d.Algs, d.Now, d.Cost)
				if err != nil {
					t.Fatal(err)
				}
				if errs[i] != nil {
					t.Fatalf("set %d, beside the failing one: %v", i, errs[i])
				}
				if !slices.Equal(got[i], want) {
					t.Fatalf("set %d, beside the failing one:\n  lua %+v\n  go  %+v", i, got[i], want)
				}
			}
			if last := got[len(got)-1]; last[1].Allowed {
				t.Fatalf("the third charge of a limit of 2 was admitted: %+v", last)
			}
		})
	}
}

// TestSetBatchRequestIDs: a batch resent with the store's own request IDs,
// as go-redis resends one after a lost reply, gets the first outcome of
// each set and charges nothing again; and under coalescing, sets that
// carry the caller's ID, each retried by three callers at once among sets
// without one, are each charged once.
func TestSetBatchRequestIDs(t *testing.T) {
	ctx := context.Background()
	set := []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 3, Window: time.Hour},
		algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10},
	}
	t.Run("store's IDs, resent", func(t *testing.T) {
		s := storeredis.New(newClient(t, redistest.Standalone(t).Addr), storeredis.WithClientTime())
		key := fmt.Sprint(testKey(t), ":", time.Now().UnixNano())
		now := time.Date(2026, 6, 1, 12, 30, 0, 0, time.UTC)
		batch := []storeredis.BatchSet{
			{Key: key, Algs: set, Now: now, Cost: 1, ID: "s.1"},
			{Key: key, Algs: set, Now: now, Cost: 1, ID: "s.2"},
		}
		first, errs := storeredis.DecideSetBatch(ctx, s, batch)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		again, errs := storeredis.DecideSetBatch(ctx, s, batch)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			if !slices.Equal(again[i], first[i]) || !first[i][0].Allowed {
				t.Fatalf("set %d resent: %+v, first %+v; want the first admission again", i, again[i], first[i])
			}
		}
		third, errs := storeredis.DecideSetBatch(ctx, s, []storeredis.BatchSet{
			{Key: key, Algs: set, Now: now, Cost: 1, ID: "s.3"},
			{Key: key, Algs: set, Now: now, Cost: 1, ID: "s.4"},
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if !third[0][0].Allowed || third[0][0].Remaining != 0 || third[1][0].Allowed {
			t.Fatalf("after two sets resent, two more: %+v; want the third of 3 admitted, the fourth denied", third)
		}
	})
	t.Run("caller's IDs, coalesced", func(t *testing.T) {
		c := newClient(t, redistest.Standalone(t).Addr)
		trips := redistest.CountRoundTrips(c)
		s := storeredis.New(c, storeredis.WithCoalescing(1), storeredis.WithDenyCache(0), storeredis.WithClientTime())
		big := []algorithms.Algorithm{
			algorithms.FixedWindow{Limit: 1_000_000, Window: time.Hour},
			algorithms.GCRA{Rate: algorithms.PerHour(1_000_000), Burst: 1_000_000},
		}
		now := time.Now().Truncate(time.Microsecond)              // every set at one instant: nothing refills
		key := fmt.Sprint(testKey(t), ":", time.Now().UnixNano()) // a server outlives a run under -count
		busy := key + ":busy"
		const ids, retries, plain = 100, 3, 20
		var wg sync.WaitGroup
		var decisions atomic.Int64
		for r := range retries {
			wg.Go(func() {
				for i := range ids {
					id := fmt.Sprint(key, ":", (i+r*ids/retries)%ids)
					res, err := s.DecideSet(ratewise.WithRequestID(ctx, id), store.Key{Name: key}, big, now, 1)
					if err != nil || !res[0].Allowed || !res[1].Allowed {
						t.Errorf("a set with ID %s: %+v, %v; want admitted", id, res, err)
						return
					}
					decisions.Add(1)
				}
			})
		}
		for range 16 {
			wg.Go(func() {
				for range plain {
					if _, err := s.DecideSet(ctx, store.Key{Name: busy}, big, now, 1); err != nil {
						t.Error(err)
						return
					}
					decisions.Add(1)
				}
			})
		}
		wg.Wait()
		peek, err := s.DecideSet(ctx, store.Key{Name: key}, big, now, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i, res := range peek {
			if used := algo.MaxCost(big[i]) - res.Remaining; used != ids {
				t.Errorf(
					"limit %s: %d charged by %d sets each sent %d times with its ID, want %d",
					big[i],
					used,
					ids,
					retries,
					ids,
				)
			}
		}
		if n, rt := decisions.Load(), trips.Load(); rt >= n {
			t.Fatalf("%d decisions took %d round trips: nothing was coalesced", n, rt)
		} else {
			t.Logf("%d sets' decisions (%d with IDs, alone) in %d round trips", n, ids*retries, rt)
		}
	})
}

// TestCoalescedSetsAreExact has 64 callers decide at one instant (client
// time) on one subject, half of them a set of a sliding log of 150 and a
// GCRA of 400, at costs 1 and 2, half the GCRA alone at cost 1, with
// coalescing's threshold at one decision in flight, so that nearly every
// decision is batched, sets and single decisions in the same round trips
// on the same GCRA state. The units the sets' callers were told were
// admitted are at most 150 and are exactly what the log's state holds (a
// caller given another's Result breaks that), sets and single decisions
// together are told exactly 400 (their demand is far more), which the
// GCRA's state holds, and the decisions take fewer round trips than there
// are decisions. On Redis with go-redis's default client (whose resends
// make the store send request IDs of its own, so the batches carry once
// keys), with one that never resends, and on the cluster.
func TestCoalescedSetsAreExact(t *testing.T) {
	for _, target := range []struct {
		name   string
		client func(t *testing.T) redis.Scripter
	}{
		{"redis", func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) }},
		{"redis-no-resends", func(t *testing.T) redis.Scripter {
			c := redis.NewClient(&redis.Options{Addr: redistest.Standalone(t).Addr, MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			return c
		}},
		{"cluster", func(t *testing.T) redis.Scripter {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return c
		}},
	} {
		t.Run(target.name, func(t *testing.T) {
			client := target.client(t)
			trips := redistest.CountRoundTrips(client.(interface{ AddHook(redis.Hook) }))
			s := storeredis.New(client, storeredis.WithCoalescing(1), storeredis.WithClientTime(), storeredis.WithDenyCache(0))
			logLimit := algorithms.SlidingLog{Limit: 150, Window: time.Hour}
			gcra := algorithms.GCRA{Rate: algorithms.PerHour(400), Burst: 400}
			set := []algorithms.Algorithm{logLimit, gcra}
			key := fmt.Sprint(testKey(t), ":", time.Now().UnixNano()) // a server outlives a run under -count
			now := time.Now().Truncate(time.Microsecond)
			const callers, each = 64, 20
			var setsAdmitted, singlesAdmitted, decisions atomic.Int64
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for range each {
						if c%2 == 0 {
							cost := int64(1 + c%4/2) // 1 or 2, so that a caller given another's Result shows
							res, err := s.DecideSet(context.Background(), store.Key{Name: key}, set, now, cost)
							if err != nil || len(res) != 2 {
								t.Error(res, err)
								return
							}
							if res[0].Allowed && res[1].Allowed {
								setsAdmitted.Add(cost)
							}
						} else {
							res, err := s.Decide(context.Background(), store.Key{Name: key}, gcra, now, 1)
							if err != nil {
								t.Error(err)
								return
							}
							if res.Allowed {
								singlesAdmitted.Add(1)
							}
						}
						decisions.Add(1)
					}
				})
			}
			wg.Wait()
			sets, singles := setsAdmitted.Load(), singlesAdmitted.Load()
			if sets > 150 || sets+singles != 400 {
				t.Fatalf(
					"sets admitted %d units and single decisions %d; want at most 150 by sets and exactly 400 in all",
					sets,
					singles,
				)
			}
			peek, err := s.DecideSet(context.Background(), store.Key{Name: key}, set, now, 0)
			if err != nil {
				t.Fatal(err)
			}
			if peek[0].Remaining != 150-sets || peek[1].Remaining != 0 {
				t.Fatalf(
					"the states after sets admitted %d units and single decisions %d: %+v; want %d left in the log and none "+
						"in the GCRA",
					sets,
					singles,
					peek,
					150-sets,
				)
			}
			if n, rt := decisions.Load(), trips.Load(); rt >= n {
				t.Fatalf("%d decisions took %d round trips: nothing was coalesced", n, rt)
			} else {
				t.Logf("%d decisions (sets admitted %d units, single decisions %d) in %d round trips", n, sets, singles, rt)
			}
		})
	}
}
