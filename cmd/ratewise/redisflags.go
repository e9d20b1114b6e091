package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay"
)

// defaultDialTimeout is how long a connection may take, unless a URL says.
const defaultDialTimeout = 2 * time.Second

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
				return nil, "", usagef(
					"--cluster %q: want comma-separated host:port seeds, or a URL such as "+
						"redis://user:password@host:6379?addr=host2:6379",
					s,
				)
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
