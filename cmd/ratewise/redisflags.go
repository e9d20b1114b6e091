package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/redisinfo"
	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/replay"
)

// storeUse is what a command does with the store redisFlags choose, which
// decides its flags and the in-process store it falls back on.
type storeUse int

const (
	// forCompare runs the in-memory store and a second store beside it:
	// a Redis, or the embedded miniredis; --memory-store runs the in-memory
	// store alone.
	forCompare storeUse = iota
	// forRecommend measures one store: a Redis, or the in-memory store.
	forRecommend
	// forGuide runs compare and recommend's examples on a Redis, or on
	// guide's own in-process stores, for which open returns nil.
	forGuide
)

// redisFlags choose the store a command measures: a Redis at an address or
// URL, a cluster, a throwaway redis-server the command starts itself, or an
// in-process store. With none of them, the command starts a redis-server
// when one is on the PATH, and falls back on an in-process store when not.
type redisFlags struct {
	addr, cluster            string
	start, memory, miniredis bool
	use                      storeUse
	// names are the flags registered, in the order the usage lists them.
	names []string
}

// defaultDialTimeout is how long a connection may take, unless a URL says.
const defaultDialTimeout = 2 * time.Second

func (f *redisFlags) register(fs *flag.FlagSet, what string, use storeUse) {
	f.use = use
	f.names = []string{"redis", "cluster", "start-redis"}
	fs.StringVar(&f.addr, "redis", "", what+" on the Redis at this address: host:port, or a URL such as redis://user:password@host:6379/0 (rediss:// for TLS)")
	fs.StringVar(&f.cluster, "cluster", "", what+" on the Redis Cluster with these comma-separated seed addresses (host:port), or at a URL such as redis://user:password@host:6379?addr=host2:6379")
	fs.BoolVar(&f.start, "start-redis", false, what+" on a throwaway redis-server started on a free loopback port and stopped at exit; the default when redis-server is on the PATH")
	switch use {
	case forCompare:
		f.names = append(f.names, "memory-store", "miniredis")
		fs.BoolVar(&f.memory, "memory-store", false, "run the in-memory store alone")
		fs.BoolVar(&f.miniredis, "miniredis", false, "run the embedded miniredis beside the in-memory store, even when redis-server is on the PATH; the default when it is not")
	case forRecommend:
		f.names = append(f.names, "memory-store")
		fs.BoolVar(&f.memory, "memory-store", false, "measure the in-memory store's Go heap, even when redis-server is on the PATH; the default when it is not")
	case forGuide:
		f.names = append(f.names, "miniredis")
		fs.BoolVar(&f.miniredis, "miniredis", false, "run compare on the in-memory store and the embedded miniredis, and recommend's examples on the in-memory store, even when redis-server is on the PATH; the default when it is not")
	}
}

// open returns the store the flags choose and describes it, as a phrase
// that follows "measured on", for the command's output. For guide, the
// target is nil when guide is to use its own in-process stores.
func (f *redisFlags) open(ctx context.Context) (replay.Target, string, error) {
	set := map[string]bool{"redis": f.addr != "", "cluster": f.cluster != "", "start-redis": f.start, "memory-store": f.memory, "miniredis": f.miniredis}
	var chosen []string
	for _, n := range f.names {
		if set[n] {
			chosen = append(chosen, "--"+n)
		}
	}
	if len(chosen) > 1 {
		return nil, "", usagef("%s: give only one of %s", strings.Join(chosen, " and "), orList(f.names))
	}
	switch {
	case f.addr != "":
		return dialRedis(ctx, f.addr)
	case f.cluster != "":
		return dialCluster(ctx, f.cluster)
	case f.start:
		return startRedis(ctx)
	case f.memory:
		t, about := f.inProcess("--memory-store")
		return t, about, nil
	case f.miniredis:
		t, about := f.inProcess("--miniredis")
		return t, about, nil
	}
	if _, err := redistest.Binary(); err == nil {
		return startRedis(ctx)
	}
	t, about := f.inProcess("redis-server not found on PATH; install it, or give --redis, to measure Redis")
	return t, about, nil
}

// inProcess is the in-process store the command falls back on, and its
// description, which says how it differs from Redis; why says why it is
// used.
func (f *redisFlags) inProcess(why string) (replay.Target, string) {
	switch {
	case f.use == forCompare && f.memory:
		return replay.Memory{}, "the in-memory store alone (" + why + ")"
	case f.use == forCompare:
		return replay.Miniredis{}, "the embedded miniredis (" + why + "), not Redis: it runs the same Lua scripts, " +
			"but its memory is not Redis's and its speed is no guide to Redis's"
	case f.use == forRecommend:
		return replay.Memory{}, "the in-memory store's Go heap (" + why + "), not Redis, where a sorted-set record costs several times more"
	}
	return nil, "the in-memory store and the embedded miniredis (" + why + "), not Redis: miniredis runs the same Lua scripts, " +
		"but its memory is not Redis's and its speed is no guide to Redis's"
}

// orList lists flag names as "--a, --b or --c".
func orList(names []string) string {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--" + n
	}
	if len(flags) < 2 {
		return strings.Join(flags, "")
	}
	return strings.Join(flags[:len(flags)-1], ", ") + " or " + flags[len(flags)-1]
}

// isURL reports whether s is a URL rather than host:port.
func isURL(s string) bool { return strings.Contains(s, "://") }

// redisOptions reads --redis: host:port, or a URL that redis.ParseURL takes
// (redis://user:password@host:port/db, rediss:// for TLS, unix://). where
// is what errors and descriptions show of it: never the password.
func redisOptions(s string) (opts *redis.Options, where string, err error) {
	if !isURL(s) {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return nil, "", usagef("--redis %q: want host:port or a URL such as redis://user:password@host:6379/0", s)
		}
		return &redis.Options{Addr: s, DialTimeout: defaultDialTimeout}, s, nil
	}
	where, err = redactURL("--redis", s)
	if err != nil {
		return nil, "", err
	}
	if opts, err = redis.ParseURL(s); err != nil {
		return nil, "", usagef("--redis %s: %s", where, strings.TrimPrefix(err.Error(), "redis: "))
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	return opts, where, nil
}

// clusterOptions reads --cluster: comma-separated host:port seeds, or a URL
// that redis.ParseClusterURL takes
// (redis://user:password@host:port?addr=host2:port2, rediss:// for TLS).
func clusterOptions(s string) (opts *redis.ClusterOptions, where string, err error) {
	if !isURL(s) {
		seeds := strings.Split(s, ",")
		for i, seed := range seeds {
			seeds[i] = strings.TrimSpace(seed)
			if _, _, err := net.SplitHostPort(seeds[i]); err != nil {
				return nil, "", usagef("--cluster %q: want comma-separated host:port seeds, or a URL such as redis://user:password@host:6379?addr=host2:6379", s)
			}
		}
		return &redis.ClusterOptions{Addrs: seeds, DialTimeout: defaultDialTimeout}, strings.Join(seeds, ","), nil
	}
	where, err = redactURL("--cluster", s)
	if err != nil {
		return nil, "", err
	}
	if opts, err = redis.ParseClusterURL(s); err != nil {
		return nil, "", usagef("--cluster %s: %s", where, strings.TrimPrefix(err.Error(), "redis: "))
	}
	if opts.DialTimeout == 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	return opts, where, nil
}

// redactURL returns s with its password, if any, replaced by xxxxx. An
// error does not repeat s, which may hold the password.
func redactURL(flagName, s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return "", usagef("%s: not a valid URL: %v", flagName, err)
	}
	return u.Redacted(), nil
}

func dialRedis(ctx context.Context, s string) (replay.Target, string, error) {
	opts, where, err := redisOptions(s)
	if err != nil {
		return nil, "", err
	}
	c := redis.NewClient(opts)
	r, err := replay.DialRedisClient(ctx, "redis", c, where)
	if err != nil {
		return nil, "", err
	}
	return r, fmt.Sprintf("the Redis at %s (%s)", where, serverVersion(ctx, c)), nil
}

func dialCluster(ctx context.Context, s string) (replay.Target, string, error) {
	opts, where, err := clusterOptions(s)
	if err != nil {
		return nil, "", err
	}
	c := redis.NewClusterClient(opts)
	r, err := replay.DialRedisClient(ctx, "cluster", c, where)
	if err != nil {
		return nil, "", err
	}
	return r, fmt.Sprintf("the Redis Cluster at %s (%s)", where, serverVersion(ctx, c)), nil
}

func startRedis(ctx context.Context) (replay.Target, string, error) {
	srv, err := redistest.Start()
	if err != nil {
		return nil, "", fmt.Errorf("cannot start a throwaway redis-server: %w", err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, DialTimeout: defaultDialTimeout})
	r, err := replay.DialRedisClient(ctx, "redis", c, srv.Addr)
	if err != nil {
		srv.Stop()
		return nil, "", err
	}
	about := fmt.Sprintf("a throwaway redis-server started for this run (%s at %s)", serverVersion(ctx, c), srv.Addr)
	return &startedRedis{Redis: r, srv: srv}, about, nil
}

// serverVersion is "redis 7.2.4", or "redis" when INFO does not say.
func serverVersion(ctx context.Context, c redis.UniversalClient) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if v := redisinfo.Field(info, "redis_version"); err == nil && v != "?" {
		return "redis " + v
	}
	return "redis"
}

// startedRedis is a Redis target on a redis-server of our own, stopped
// with the target.
type startedRedis struct {
	*replay.Redis
	srv *redistest.Server
}

func (s *startedRedis) Close() {
	s.Redis.Close()
	s.srv.Stop()
}
