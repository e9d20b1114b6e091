package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/replay"
)

// redisFlags choose the Redis a command runs on: an address, a cluster's
// seed addresses, or a throwaway redis-server it starts itself.
type redisFlags struct {
	addr, cluster string
	start         bool
}

func (f *redisFlags) register(fs *flag.FlagSet, what string) {
	fs.StringVar(&f.addr, "redis", "", what+" on the Redis at this address (host:port)")
	fs.StringVar(&f.cluster, "cluster", "", what+" on the Redis Cluster with these comma-separated seed addresses")
	fs.BoolVar(&f.start, "start-redis", false, what+" on a throwaway redis-server started on a free loopback port and stopped at exit")
}

func (f *redisFlags) given() bool { return f.addr != "" || f.cluster != "" || f.start }

// open connects to the Redis the flags name, or returns nil when they name
// none.
func (f *redisFlags) open(ctx context.Context) (replay.Target, error) {
	n := 0
	for _, set := range []bool{f.addr != "", f.cluster != "", f.start} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return nil, nil
	case n > 1:
		return nil, usagef("give one of -redis, -cluster and -start-redis")
	case f.start:
		srv, err := redistest.Start()
		if err != nil {
			return nil, fmt.Errorf("-start-redis: %w", err)
		}
		r, err := replay.DialRedis(ctx, srv.Addr, nil)
		if err != nil {
			srv.Stop()
			return nil, err
		}
		return &startedRedis{Redis: r, srv: srv}, nil
	}
	var seeds []string
	if f.cluster != "" {
		seeds = strings.Split(f.cluster, ",")
	}
	return replay.DialRedis(ctx, f.addr, seeds)
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
