package fault_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// Failover timing. The surviving masters agree that a master is down
// 1.1 to 1.8 s after it dies (cluster-node-timeout is 1 s in redistest);
// its replica waits 0.5 to 1 s more before its election, and is promoted
// 2.1 to 2.8 s after the kill in the runs measured. A ClusterClient finds
// the promoted replica at its next state reload.
const (
	clusterReload = time.Second
	// recoveryBound is the longest from the kill to the first decision on
	// the dead master's keys: up to 3 s to the promotion, one reload
	// interval, and a second of margin for a loaded machine (3.6 s at
	// most measured, under -race).
	recoveryBound = 5 * time.Second
	// afterPromotionBound is the longest from the promotion to that
	// decision: one reload interval, the reload's own round trips, and a
	// margin (0.9 s at most measured).
	afterPromotionBound = clusterReload + 500*time.Millisecond
)

// clusterOptions are clientOptions for a Cluster client, with a state
// reload every second: go-redis learns of a failover only from a MOVED or
// ASK reply or at that interval (60 s by default), and a dead master
// answers neither.
func clusterOptions(addrs []string) *redis.ClusterOptions {
	o := clientOptions("")
	return &redis.ClusterOptions{
		Addrs:                      addrs,
		ContextTimeoutEnabled:      o.ContextTimeoutEnabled,
		MaxRetries:                 o.MaxRetries,
		DialTimeout:                o.DialTimeout,
		DialerRetries:              o.DialerRetries,
		DialerRetryTimeout:         o.DialerRetryTimeout,
		ReadTimeout:                o.ReadTimeout,
		WriteTimeout:               o.WriteTimeout,
		PoolTimeout:                o.PoolTimeout,
		ClusterStateReloadInterval: clusterReload,
	}
}

// failoverKey is one key of the load, on the master Masters[master].
type failoverKey struct {
	name    string
	master  int
	allowed atomic.Int64 // admissions, over the whole test
	denied  atomic.Int64
	lastOK  atomic.Int64 // UnixNano of the end of its latest decision
}

// failoverMonitor polls the killed master's replica for its role and a
// surviving master for the cluster's state. Times are UnixNano.
type failoverMonitor struct {
	lastReplica atomic.Int64 // start of the latest poll that saw the replica still a replica
	promoted    atomic.Int64 // end of the first poll that saw it a master
	downFrom    atomic.Int64 // first poll that saw cluster_state:fail
	downTo      atomic.Int64 // first poll that saw cluster_state:ok after that
}

func (m *failoverMonitor) run(t *testing.T, replica, survivor *redistest.Server, stop <-chan struct{}) (wait func()) {
	rc := newClient(t, &redis.Options{Addr: replica.Addr, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	sc := newClient(t, &redis.Options{Addr: survivor.Addr, MaxRetries: -1, ReadTimeout: 200 * time.Millisecond})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx := context.Background()
			start := time.Now().UnixNano()
			if info, err := rc.Info(ctx, "replication").Result(); err == nil {
				switch redisinfo.Field(info, "role") {
				case "slave":
					m.lastReplica.Store(start)
				case "master":
					m.promoted.CompareAndSwap(0, time.Now().UnixNano())
				}
			}
			if info, err := sc.ClusterInfo(ctx).Result(); err == nil {
				now := time.Now().UnixNano()
				switch redisinfo.Field(info, "cluster_state") {
				case "fail":
					m.downFrom.CompareAndSwap(0, now)
				case "ok":
					if m.downFrom.Load() != 0 {
						m.downTo.CompareAndSwap(0, now)
					}
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return func() { <-done }
}

// errorKinds counts failed decisions by what Redis or the network said, and
// keeps the first message of each kind after the kill.
type errorKinds struct {
	refused, eof, clusterDown, deadline, other atomic.Int64
	first, last                                atomic.Int64 // UnixNano: the ends of failures that started after the kill
	mu                                         sync.Mutex
	samples                                    map[string]string // kind → "+time since the kill message"; requires mu
}

// record counts a failed call that ran from start to end (UnixNano); kill
// is when the master died, or 0 before.
func (e *errorKinds) record(err error, start, end, kill int64) {
	msg, kind := err.Error(), "other"
	switch {
	case strings.Contains(msg, "CLUSTERDOWN"):
		e.clusterDown.Add(1)
		kind = "clusterdown"
	case strings.Contains(msg, "connection refused"):
		e.refused.Add(1)
		kind = "refused"
	case strings.Contains(msg, "EOF"):
		e.eof.Add(1)
		kind = "eof"
	case strings.Contains(msg, "deadline exceeded"):
		e.deadline.Add(1)
		kind = "deadline"
	default:
		e.other.Add(1)
	}
	if kill == 0 || start <= kill {
		return
	}
	e.first.CompareAndSwap(0, end)
	e.last.Store(end)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.samples == nil {
		e.samples = map[string]string{}
	}
	if _, ok := e.samples[kind]; !ok {
		e.samples[kind] = fmt.Sprintf("+%v %s", time.Duration(end-kill).Round(time.Millisecond), msg)
	}
}

func (e *errorKinds) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return fmt.Sprintf("{refused=%d eof=%d clusterdown=%d deadline=%d other=%d first_of_each=%q}",
		e.refused.Load(), e.eof.Load(), e.clusterDown.Load(), e.deadline.Load(), e.other.Load(), e.samples)
}

func (e *errorKinds) total() int64 {
	return e.refused.Load() + e.eof.Load() + e.clusterDown.Load() + e.deadline.Load() + e.other.Load()
}

// TestClusterFailover: a master of a 3-master cluster, each master with a
// replica (cluster-node-timeout 1 s), killed with SIGKILL under 8 callers
// with 100 ms deadlines, through a ClusterClient with the recommended
// settings and a ClusterStateReloadInterval of 1 s. 48 keys spread over
// the masters each spend their whole quota (10 an hour, so none refills)
// before the kill, and that state has reached the replicas
// (WaitReplicated). Across the failover:
//   - every failure is store.ErrUnavailable or the caller's
//     context.DeadlineExceeded, with a zero Result, by the deadline plus a
//     margin;
//   - no key is admitted past its limit: the promoted replica kept what
//     had replicated;
//   - no decision on the dead master's keys succeeds before its replica is
//     promoted;
//   - one succeeds within recoveryBound of the kill and afterPromotionBound
//     of the promotion, and then every key, on every master, is decided
//     again;
//   - no decision on the surviving masters' keys fails between the kill
//     and the cluster's reporting itself down
//     (live_errors_before_cluster_fail), coalescing on (the default): a
//     decision never shares a round trip with the dead master's keys.
//
// The store's deny cache is off: it would deny the spent keys from memory,
// and the dead master's keys would never reach Redis to show the failover.
//
// The figures also show what is not asserted: the whole cluster refuses
// commands (CLUSTERDOWN) from when the survivors mark the master failed
// until the promotion, so decisions on every master's keys fail then.
func TestClusterFailover(t *testing.T) {
	const (
		deadline = 100 * time.Millisecond
		limit    = 10
		nKeys    = 48
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

	o := clusterOptions(cl.Addrs())
	rdb := redis.NewClusterClient(o)
	t.Cleanup(func() { rdb.Close() })
	st := storeredis.New(rdb, storeredis.WithDenyCache(0))
	alg := algorithms.GCRA{Rate: algorithms.PerHour(limit), Burst: limit}
	lim, err := ratewise.New(st, alg)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	masterIndex := map[string]int{}
	for i, m := range cl.Masters {
		masterIndex[m.Addr] = i
	}
	keys := make([]*failoverKey, nKeys)
	perMaster := make([]int, len(cl.Masters))
	for i := range keys {
		name := fmt.Sprintf("failover:%d", i)
		node, err := rdb.MasterForKey(ctx, st.Key(name, alg))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := masterIndex[node.Options().Addr]
		if !ok {
			t.Fatalf("key %s is on %s, not a master", name, node.Options().Addr)
		}
		keys[i] = &failoverKey{name: name, master: m}
		perMaster[m]++
	}
	for i, n := range perMaster {
		if n == 0 {
			t.Fatalf("no key on master %d (%v): spread the keys", i, perMaster)
		}
	}

	ty := &tally{deadlines: true}
	var deadErrs, liveErrs errorKinds
	var killedAt atomic.Int64    // UnixNano: the dead master has exited
	var deadFirstOK atomic.Int64 // UnixNano: the first decision on its keys after the kill
	var mon failoverMonitor
	var okBeforePromotion atomic.Int64
	var spentAt atomic.Int64            // UnixNano: every key had been denied
	var admittedAfterSpent atomic.Int64 // admissions of calls that started after spentAt
	var liveErrsBeforeDown atomic.Int64 // failures on the other masters' keys before the cluster was down
	next := make([]int, 8)              // each goroutine's next key, its own
	stop := make(chan struct{})
	wait := load(len(next), ty, stop, func(i int) (ratewise.Result, error) {
		k := keys[(i*nKeys/len(next)+next[i])%nKeys]
		next[i]++
		start := time.Now().UnixNano()
		res, err := withDeadline(
			deadline,
			func(ctx context.Context) (ratewise.Result, error) { return lim.Allow(ctx, k.name) },
		)
		end := time.Now().UnixNano()
		kill := killedAt.Load()
		afterKill := kill != 0 && start > kill
		if err != nil {
			if k.master == killed {
				deadErrs.record(err, start, end, kill)
			} else {
				liveErrs.record(err, start, end, kill)
				if afterKill && mon.downFrom.Load() == 0 {
					liveErrsBeforeDown.Add(1)
				}
			}
			return res, err
		}
		if res.Allowed {
			k.allowed.Add(1)
			if s := spentAt.Load(); s != 0 && start > s {
				admittedAfterSpent.Add(1)
			}
		} else {
			k.denied.Add(1)
		}
		k.lastOK.Store(end)
		if k.master == killed && afterKill {
			deadFirstOK.CompareAndSwap(0, end)
			if end < mon.lastReplica.Load() {
				okBeforePromotion.Add(1)
			}
		}
		return res, err
	})
	stopLoad := sync.OnceFunc(func() { close(stop); wait() })
	defer stopLoad()

	// Spend every key's quota under the load, until Redis denies each key
	// (a caller whose deadline ended may not have seen its admission), then
	// wait for that state to reach the replicas: from here on, every
	// admission is one too many.
	spent := waitFor(5*time.Second, func() bool {
		for _, k := range keys {
			if k.denied.Load() == 0 {
				return false
			}
		}
		return true
	})
	if !spent {
		stopLoad()
		t.Fatalf("not every key was denied within 5s: %s", ty.figures())
	}
	spentAt.Store(time.Now().UnixNano())
	if err := cl.WaitReplicated(ctx); err != nil {
		stopLoad()
		t.Fatal(err)
	}
	before := ty.figures()

	stopMon := make(chan struct{})
	waitMon := mon.run(t, cl.Replicas[killed][0], cl.Masters[(killed+1)%len(cl.Masters)], stopMon)
	stopMonitor := sync.OnceFunc(func() { close(stopMon); waitMon() })
	defer stopMonitor()
	time.Sleep(50 * time.Millisecond) // the monitor sees the replica a replica
	cl.Masters[killed].Kill()
	kill := time.Now()
	killedAt.Store(kill.UnixNano())

	recovered := waitFor(recoveryBound+time.Second, func() bool { return deadFirstOK.Load() != 0 })
	// Every key, on every master, is decided again.
	allBack := recovered && waitFor(2*time.Second, func() bool {
		p := mon.promoted.Load()
		for _, k := range keys {
			if k.lastOK.Load() <= p {
				return false
			}
		}
		return true
	})
	time.Sleep(100 * time.Millisecond)
	stopLoad()
	stopMonitor()

	since := func(at int64) time.Duration {
		if at == 0 {
			return -1
		}
		return time.Duration(at - kill.UnixNano()).Round(time.Millisecond)
	}
	promoted, firstOK := mon.promoted.Load(), deadFirstOK.Load()
	afterPromotion := time.Duration(-1)
	if promoted != 0 && firstOK != 0 {
		afterPromotion = time.Duration(firstOK - promoted).Round(time.Millisecond)
	}
	over, deadKeysBack := 0, 0
	var overKeys []string
	for _, k := range keys {
		if n := k.allowed.Load(); n > limit {
			over++
			overKeys = append(overKeys, fmt.Sprintf("%s:%d", k.name, n))
		}
		if k.master == killed && k.lastOK.Load() > promoted {
			deadKeysBack++
		}
	}
	t.Logf(
		"figures: %s before_kill{%s} formation=%v keys_per_master=%v node_timeout=1s reload=%v "+
			"promoted_after=%v cluster_fail=%v..%v dead_first_ok=%v first_ok_after_promotion=%v "+
			"dead_errors=%s dead_errors_window=%v..%v live_errors=%s live_errors_window=%v..%v "+
			"live_errors_before_cluster_fail=%d "+
			"ok_before_promotion=%d dead_keys_back=%d/%d over_limit=%d admitted_after_spent=%d bound=%v/%v",
		ty.figures(),
		before,
		formation.Round(time.Millisecond),
		perMaster,
		o.ClusterStateReloadInterval,
		since(promoted),
		since(mon.downFrom.Load()),
		since(mon.downTo.Load()),
		since(firstOK),
		afterPromotion,
		&deadErrs,
		since(deadErrs.first.Load()),
		since(deadErrs.last.Load()),
		&liveErrs,
		since(liveErrs.first.Load()),
		since(liveErrs.last.Load()),
		liveErrsBeforeDown.Load(),
		okBeforePromotion.Load(),
		deadKeysBack,
		perMaster[killed],
		over,
		admittedAfterSpent.Load(),
		recoveryBound,
		afterPromotionBound,
	)

	ty.check(t)
	if n := ty.canceled.Load(); n > 0 {
		t.Errorf("%d calls failed with context.Canceled; no caller cancels", n)
	}
	if got, max := time.Duration(ty.maxLatency.Load()), deadline+margin; got > max {
		t.Errorf("a call took %v, want at most %v (its deadline plus a margin)", got, max)
	}
	if over > 0 {
		t.Errorf(
			"%d keys were admitted past their limit of %d across the failover (key:admissions): %v",
			over,
			limit,
			overKeys,
		)
	}
	if n := admittedAfterSpent.Load(); n > 0 {
		t.Errorf("%d admissions on keys Redis had already denied (their quota spent and replicated before the kill)", n)
	}
	if deadErrs.total() == 0 {
		t.Errorf("no decision on the dead master's keys failed, so the kill was not tested")
	}
	if n := liveErrsBeforeDown.Load(); n > 0 {
		t.Errorf(
			"%d decisions on the surviving masters' keys failed after the kill, before the cluster reported itself "+
				"down, want 0 (live_errors=%s)",
			n,
			&liveErrs,
		)
	}
	if promoted == 0 {
		t.Fatalf("the dead master's replica was not promoted within %v", recoveryBound+time.Second)
	}
	if n := okBeforePromotion.Load(); n > 0 {
		t.Errorf("%d decisions on the dead master's keys succeeded before its replica was promoted", n)
	}
	if !recovered {
		t.Fatalf("no decision on the dead master's keys succeeded within %v of the kill (promoted after %v)",
			recoveryBound+time.Second, since(promoted))
	}
	if got := since(firstOK); got > recoveryBound {
		t.Errorf("the dead master's keys were decided again %v after the kill, want at most %v", got, recoveryBound)
	}
	if afterPromotion > afterPromotionBound {
		t.Errorf(
			"the dead master's keys were decided again %v after the promotion, want at most %v (ClusterStateReloadInterval %v)",
			afterPromotion,
			afterPromotionBound,
			o.ClusterStateReloadInterval,
		)
	}
	if !allBack {
		t.Errorf("not every key was decided again within 2s of the first recovery (dead master's keys back: %d of %d)",
			deadKeysBack, perMaster[killed])
	}
}
