package fault_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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

// replicasKey is one key of TestFailoverWithReplicas's load.
type replicasKey struct {
	name         string
	lim          *ratewise.Limiter
	acked        atomic.Int64 // admissions the store reported (err == nil, Allowed)
	ackedHeld    atomic.Int64 // of which, decided while replication was held back
	heldCalls    atomic.Int64 // calls made while replication was held back, whatever their outcome
	notReplicate atomic.Int64 // failures wrapping storeredis.ErrNotReplicated
}

// TestFailoverWithReplicas: with WithReplicas(1, 100ms), a master killed
// (SIGKILL) under load loses no admission the store acknowledged: every
// admission reported as admitted (err == nil, Allowed) before the kill is
// still charged on the promoted replica. A store on the same cluster
// without the option, deciding keys on the same master at the same time,
// is the control: it loses the admissions its master acknowledged and had
// not yet replicated, and the test fails if it loses none, since then
// nothing was tested.
//
// On loopback a replica applies a write within microseconds, so a kill
// rarely catches one in flight. The test makes the window deterministic:
// the replica is held back (CLIENT PAUSE WRITE on it stops it applying its
// master's stream, and acknowledging it) while both stores keep deciding,
// then the master is killed. The replica drops what it had received and not
// applied when its master's link closes, and is released only then. So the
// control's admissions made while it was held are lost, and the option's
// fail with ErrNotReplicated after 100 ms, never reported as admissions.
// The replica is then promoted with CLUSTER FAILOVER FORCE rather than
// after cluster-node-timeout: what it has is fixed at the kill, and
// TestClusterFailover covers the automatic promotion.
//
// Each key is a GCRA limit of one an hour with a burst of 100,000, which
// no key reaches and which refills nothing during the test, so what the
// promoted replica has charged a key is the burst less its Remaining.
func TestFailoverWithReplicas(t *testing.T) {
	const (
		deadline = 500 * time.Millisecond
		timeout  = 100 * time.Millisecond
		burst    = 100000
		perStore = 4 // keys
		killed   = 0 // index of the master killed
	)
	redistest.SkipShort(t, "a Redis Cluster with replicas")
	redistest.Require(t)
	formStart := time.Now()
	cl, err := redistest.StartClusterWithReplicas(3, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Stop)
	formation := time.Since(formStart)

	rdb := redis.NewClusterClient(clusterOptions(cl.Addrs()))
	t.Cleanup(func() { rdb.Close() })
	durable := storeredis.New(rdb, storeredis.WithReplicas(1, timeout), storeredis.WithDenyCache(0))
	plain := storeredis.New(rdb, storeredis.WithDenyCache(0))
	alg := algorithms.GCRA{Rate: algorithms.Rate{Count: 1, Period: time.Hour}, Burst: burst}
	durableLim, err := ratewise.New(durable, alg)
	if err != nil {
		t.Fatal(err)
	}
	plainLim, err := ratewise.New(plain, alg)
	if err != nil {
		t.Fatal(err)
	}

	// Keys on the master to be killed, the first perStore for the store
	// with the option.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var durableKeys, plainKeys []*replicasKey
	for i := 0; len(plainKeys) < perStore; i++ {
		name := fmt.Sprintf("replicas:%d", i)
		node, err := rdb.MasterForKey(ctx, durable.Key(name, alg))
		if err != nil {
			t.Fatal(err)
		}
		if node.Options().Addr != cl.Masters[killed].Addr {
			continue
		}
		if len(durableKeys) < perStore {
			durableKeys = append(durableKeys, &replicasKey{name: name, lim: durableLim})
		} else {
			plainKeys = append(plainKeys, &replicasKey{name: name, lim: plainLim})
		}
	}

	var heldAt atomic.Int64 // UnixNano: replication held back from here
	var notMaybe atomic.Int64
	decide := func(keys []*replicasKey, next []int) func(i int) (ratewise.Result, error) {
		return func(i int) (ratewise.Result, error) {
			k := keys[(i*len(keys)/len(next)+next[i])%len(keys)]
			next[i]++
			start := time.Now().UnixNano()
			res, err := withDeadline(
				deadline,
				func(ctx context.Context) (ratewise.Result, error) { return k.lim.Allow(ctx, k.name) },
			)
			held := heldAt.Load() != 0 && start > heldAt.Load()
			if held {
				k.heldCalls.Add(1)
			}
			switch {
			case err == nil && res.Allowed:
				k.acked.Add(1)
				if held {
					k.ackedHeld.Add(1)
				}
			case errors.Is(err, storeredis.ErrNotReplicated):
				k.notReplicate.Add(1)
				if !errors.Is(err, store.ErrMaybeDecided) {
					notMaybe.Add(1)
				}
			}
			return res, err
		}
	}
	durableTy, plainTy := &tally{deadlines: true}, &tally{deadlines: true}
	stop := make(chan struct{})
	waitDurable := load(2, durableTy, stop, decide(durableKeys, make([]int, 2)))
	waitPlain := load(2, plainTy, stop, decide(plainKeys, make([]int, 2)))
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			waitDurable()
			waitPlain()
		}
	}
	defer stopLoad()
	sum := func(keys []*replicasKey, f func(*replicasKey) int64) int64 {
		var n int64
		for _, k := range keys {
			n += f(k)
		}
		return n
	}

	// Every key is admitted a few times, and that reaches the replica,
	// with replication running.
	if !waitFor(5*time.Second, func() bool {
		for _, k := range append(append([]*replicasKey(nil), durableKeys...), plainKeys...) {
			if k.acked.Load() < 5 {
				return false
			}
		}
		return true
	}) {
		stopLoad()
		t.Fatalf(
			"not every key was admitted 5 times within 5s: durable{%s} plain{%s}",
			durableTy.figures(),
			plainTy.figures(),
		)
	}

	// Hold replication back until the master is dead: both stores decide
	// meanwhile, the option's decisions waiting for the replica in vain.
	replica := cl.Replicas[killed][0]
	rc := newClient(t, &redis.Options{Addr: replica.Addr, MaxRetries: -1})
	if err := rc.Do(ctx, "CLIENT", "PAUSE", 10000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Do(context.Background(), "CLIENT", "UNPAUSE") })
	heldAt.Store(time.Now().UnixNano())
	held := waitFor(3*time.Second, func() bool {
		return sum(plainKeys, func(k *replicasKey) int64 { return k.ackedHeld.Load() }) >= 20 &&
			sum(durableKeys, func(k *replicasKey) int64 { return k.heldCalls.Load() }) >= 2
	})
	cl.Masters[killed].Kill()
	kill := time.Now()
	stopLoad()
	if !held {
		t.Fatalf(
			"replication held back for 3s, and the stores did not both decide meanwhile: durable{%s} plain{%s}",
			durableTy.figures(),
			plainTy.figures(),
		)
	}

	// Release the replica once its master's link is down, so that it has
	// dropped what it had not applied, and promote it.
	if !waitFor(5*time.Second, func() bool {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && redisinfo.Field(info, "master_link_status") == "down"
	}) {
		t.Fatalf("the replica %s did not see its master's link close within 5s of the kill", replica.Addr)
	}
	if err := rc.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Err(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(5*time.Second, func() bool {
		info, err := rc.Info(ctx, "replication").Result()
		return err == nil && redisinfo.Field(info, "role") == "master"
	}) {
		t.Fatalf("the replica %s was not promoted within 5s of CLUSTER FAILOVER FORCE", replica.Addr)
	}
	promotion := time.Since(kill)

	// What the promoted replica has charged each key, by an inspection
	// there, against what the store acknowledged.
	promoted := storeredis.New(rc, storeredis.WithDenyCache(0))
	charged := func(k *replicasKey) int64 {
		var res algorithms.Result
		var err error
		if !waitFor(3*time.Second, func() bool {
			res, err = promoted.Decide(ctx, store.Key{Name: k.name}, alg, time.Time{}, 0)
			return err == nil
		}) {
			t.Fatalf("inspecting %s on the promoted replica: %v", k.name, err)
		}
		return burst - res.Remaining
	}
	lost := func(keys []*replicasKey) (lost int64, perKey []string) {
		for _, k := range keys {
			c, a := charged(k), k.acked.Load()
			perKey = append(perKey, fmt.Sprintf("%s:acked=%d,charged=%d", k.name, a, c))
			if a > c {
				lost += a - c
			}
		}
		return lost, perKey
	}
	durableLost, durablePerKey := lost(durableKeys)
	plainLost, plainPerKey := lost(plainKeys)
	t.Logf(
		"figures: formation=%v promotion_after_kill=%v durable{%s acked=%d acked_while_held=%d not_replicated=%d "+
			"lost=%d keys=%v} "+
			"plain{%s acked=%d acked_while_held=%d lost=%d keys=%v}",
		formation.Round(time.Millisecond),
		promotion.Round(time.Millisecond),
		durableTy.figures(),
		sum(durableKeys, func(k *replicasKey) int64 { return k.acked.Load() }),
		sum(durableKeys, func(k *replicasKey) int64 { return k.ackedHeld.Load() }),
		sum(durableKeys, func(k *replicasKey) int64 { return k.notReplicate.Load() }),
		durableLost,
		durablePerKey,
		plainTy.figures(),
		sum(plainKeys, func(k *replicasKey) int64 { return k.acked.Load() }),
		sum(plainKeys, func(k *replicasKey) int64 { return k.ackedHeld.Load() }),
		plainLost,
		plainPerKey,
	)

	durableTy.check(t)
	plainTy.check(t)
	if durableLost > 0 {
		t.Errorf(
			"with WithReplicas(1, %v), %d acknowledged admissions are not charged on the promoted replica "+
				"(key:acked,charged): %v",
			timeout,
			durableLost,
			durablePerKey,
		)
	}
	if sum(durableKeys, func(k *replicasKey) int64 { return k.notReplicate.Load() }) == 0 {
		t.Errorf("no decision with WithReplicas failed with ErrNotReplicated while replication was held back")
	}
	if n := notMaybe.Load(); n > 0 {
		t.Errorf("%d failures wrapping ErrNotReplicated do not wrap store.ErrMaybeDecided", n)
	}
	if plainLost == 0 {
		t.Errorf(
			"the control store, without WithReplicas, lost no admission: replication was not held back, so the kill "+
				"tested nothing (%v)",
			plainPerKey,
		)
	}
}
