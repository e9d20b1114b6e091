package replay

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/roundtrips"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// Miniredis is the embedded target: every run gets its own in-process
// miniredis, so runs may proceed in parallel. It measures no memory: its
// MEMORY USAGE estimates its own Go structures, which says nothing of what
// Redis would hold (4,487 bytes for a sliding log that Redis holds in
// 2,664), so its BytesPerKey reports none.
type Miniredis struct{}

// Name returns "miniredis".
func (Miniredis) Name() string { return "miniredis" }

// Parallel returns true: every run has its own server.
func (Miniredis) Parallel() bool { return true }

// Close does nothing.
func (Miniredis) Close() {}

// Open starts a miniredis for one run.
func (Miniredis) Open(ctx context.Context) (Instance, error) {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("miniredis: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	rt := roundtrips.Count(c)
	return &miniInstance{
		m:  m,
		c:  c,
		rt: rt,
		s: storeredis.New(
			c,
			storeredis.WithClientTime(),
			storeredis.WithDenyCache(0),
			storeredis.WithCoalescing(0),
			storeredis.WithWarnings(0, nil),
		),
	}, nil
}

type miniInstance struct {
	m  *miniredis.Miniredis
	c  *redis.Client
	rt *roundtrips.Counter
	s  *storeredis.Store
}

func (i *miniInstance) Store() store.Store { return i.s }

func (i *miniInstance) Ops(context.Context) (Ops, error) {
	// miniredis counts the commands scripts run as well as the EVALSHA
	// itself, one per round trip.
	rt := i.rt.Load()
	return Ops{RoundTrips: rt, Commands: int64(i.m.CommandCount()) - rt}, nil
}

// BytesPerKey reports nothing measured: see Miniredis.
func (i *miniInstance) BytesPerKey(
	context.Context,
	*workload.Workload,
	[]string,
	algorithms.Algorithm,
) (float64, int, error) {
	return 0, 0, nil
}

func (i *miniInstance) Close() {
	i.c.Close()
	i.m.Close()
}

// Redis is a real Redis server or cluster. Runs are serial: INFO
// commandstats counts the whole server's commands. Within a run, the keys
// are replayed on ReplayGoroutines goroutines at once, one round trip per
// decision. Each run writes under its own prefix and deletes its keys when
// it is done.
type Redis struct {
	name   string
	client redis.UniversalClient
	rt     *roundtrips.Counter
	prefix string
	runs   int
}

// DialRedis connects to the Redis at addr, or to the cluster with the
// given seed addresses, and checks that it answers.
func DialRedis(ctx context.Context, addr string, cluster []string) (*Redis, error) {
	if len(cluster) > 0 {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster, DialTimeout: 2 * time.Second})
		return DialRedisClient(ctx, "cluster", c, strings.Join(cluster, ","))
	}
	return DialRedisClient(
		ctx,
		"redis",
		redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second}),
		addr,
	)
}

// Name returns "redis" or "cluster".
func (r *Redis) Name() string { return r.name }

// Parallel returns false.
func (r *Redis) Parallel() bool { return false }

// Close closes the client.
func (r *Redis) Close() { r.client.Close() }

// redisReplayGoroutines is how many keys a run on Redis replays at once:
// enough to keep a server busy over loopback, few enough that the client's
// pool (10 connections per CPU) never makes one wait.
const redisReplayGoroutines = 16

// ReplayGoroutines returns 16: a run replays 16 keys at once (see
// KeyParallel), so that it is not one round trip after another.
func (r *Redis) ReplayGoroutines() int { return redisReplayGoroutines }

// Open returns a store writing under a prefix of its own.
func (r *Redis) Open(ctx context.Context) (Instance, error) {
	r.runs++
	prefix := fmt.Sprintf("%s%d:", r.prefix, r.runs)
	// The deny cache and coalescing are off here and in miniredis: the
	// figures are what each decision of an algorithm costs Redis alone, in
	// a round trip of its own, which a denial answered from the cache or a
	// decision batched with others (as concurrent replays of many keys
	// would be) would hide.
	i := &redisInstance{
		r:      r,
		prefix: prefix,
		s: storeredis.New(
			r.client,
			storeredis.WithKeyPrefix(prefix),
			storeredis.WithClientTime(),
			storeredis.WithWarnings(0, nil),
			storeredis.WithDenyCache(0),
			storeredis.WithCoalescing(0),
		),
	}
	var err error
	if i.baseCmds, err = r.scriptCommands(ctx); err != nil {
		return nil, err
	}
	i.baseRT = r.rt.Load()
	return i, nil
}

type redisInstance struct {
	r        *Redis
	prefix   string
	s        *storeredis.Store
	baseRT   int64
	baseCmds int64
}

func (i *redisInstance) Store() store.Store { return i.s }

func (i *redisInstance) Ops(ctx context.Context) (Ops, error) {
	// The round trips are read before INFO adds its own.
	rt := i.r.rt.Load() - i.baseRT
	cmds, err := i.r.scriptCommands(ctx)
	if err != nil {
		return Ops{}, err
	}
	return Ops{RoundTrips: rt, Commands: cmds - i.baseCmds}, nil
}

// BytesPerKey averages MEMORY USAGE over the busiest keys; see
// memoryUsage.
func (i *redisInstance) BytesPerKey(
	ctx context.Context,
	_ *workload.Workload,
	keys []string,
	alg algorithms.Algorithm,
) (float64, int, error) {
	return memoryUsage(ctx, i.r.client, i.s, keys, alg)
}

// Close deletes the run's keys.
func (i *redisInstance) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	i.r.eachNode(ctx, func(ctx context.Context, c *redis.Client) error {
		redisinfo.DeleteKeys(ctx, c, i.prefix)
		return nil
	})
}

// scriptCommands sums, over every node, the commands that scripts ran:
// everything in INFO commandstats except the scripts' own EVALSHA and
// SCRIPT LOAD, the client's connection set-up and the measuring commands.
// On a Redis that other clients are using, their commands count too.
func (r *Redis) scriptCommands(ctx context.Context) (int64, error) {
	var total atomic.Int64
	err := r.eachNode(ctx, func(ctx context.Context, c *redis.Client) error {
		stats, err := redisinfo.CommandStats(ctx, c)
		if err != nil {
			return err
		}
		for name, s := range stats {
			if !redisinfo.Harness(name) && !clientCommand(name) {
				total.Add(s.Calls)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w: INFO commandstats: %v", store.ErrUnavailable, err)
	}
	return total.Load(), nil
}

func clientCommand(name string) bool {
	for _, p := range []string{
		"eval", "script", "hello", "client", "cluster", "command", "readonly", "select", "auth", "memory", "unlink",
	} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func (r *Redis) eachNode(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	if cc, ok := r.client.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, fn)
	}
	return fn(ctx, r.client.(*redis.Client))
}

// MaxSampledKeys is how many keys, at most, a Redis target's memory per
// key is averaged over: the busiest that still hold state after the run,
// each asked with MEMORY USAGE.
const MaxSampledKeys = 1000

// memoryUsage averages MEMORY USAGE over the keys that still hold state, up
// to MaxSampledKeys of them, and returns how many it averaged over. SAMPLES
// 0 asks Redis to count every element of a sorted set or hash rather than
// estimate from a sample.
func memoryUsage(
	ctx context.Context,
	c redis.Cmdable,
	s *storeredis.Store,
	keys []string,
	alg algorithms.Algorithm,
) (float64, int, error) {
	if len(keys) > MaxSampledKeys {
		keys = keys[:MaxSampledKeys]
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.MemoryUsage(ctx, s.Key(k, alg), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return 0, 0, fmt.Errorf("%w: MEMORY USAGE: %v", store.ErrUnavailable, err)
	}
	var sum, n int64
	for _, cmd := range cmds {
		if v, err := cmd.Result(); err == nil {
			sum += v
			n++
		}
	}
	if n == 0 {
		return 0, 0, nil
	}
	return float64(sum) / float64(n), int(n), nil
}
