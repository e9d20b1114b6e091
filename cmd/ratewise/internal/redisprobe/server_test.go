package redisprobe_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
)

// Every check passes on a plain redis-server with the recommended client,
// but persistence, which redistest turns off; the probe leaves no key.
func TestStandalone(t *testing.T) {
	srv := redistest.Standalone(t)
	c := safeClient(t, srv.Addr)
	rep := redisprobe.Run(context.Background(), c, time.Second)
	expect(t, rep,
		want{"server", redisprobe.StatusOK, "Redis ", ""},
		want{"cluster", redisprobe.StatusOK, "standalone", ""},
		want{"persistence", redisprobe.StatusWarning, "no AOF, and no RDB snapshot", "appendonly yes"},
		want{"eviction", redisprobe.StatusOK, "noeviction", ""},
		want{"scripts", redisprobe.StatusOK, "EVAL and EVALSHA", ""},
		want{"round trip", redisprobe.StatusOK, "EVALSHA", ""},
		want{"keys", redisprobe.StatusOK, "different hash slots", ""},
		want{"server time", redisprobe.StatusOK, "reads TIME and writes after it", ""},
		want{"clock", redisprobe.StatusOK, "Redis's clock is", ""},
		want{"client settings", redisprobe.StatusOK, "no setting", ""},
	)
	if got, want := rep.Worst(), redisprobe.StatusWarning; got != want {
		t.Errorf("worst status: got %v, want %v:\n%s", got, want, report(rep))
	}
	if keys, err := c.Keys(context.Background(), "ratewise:probe:*").Result(); err != nil ||
		len(keys) > 0 {
		t.Errorf("the probe left keys %v (%v)", keys, err)
	}

	// A Ring asks each shard; its keys share a hash tag as on a cluster.
	ring := redis.NewRing(
		&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
			WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
			DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond},
	)
	t.Cleanup(func() { ring.Close() })
	expect(t, redisprobe.Run(context.Background(), ring, time.Second),
		want{"cluster", redisprobe.StatusOK, "a Ring: 1 live shard, each answers", ""},
		want{"persistence", redisprobe.StatusWarning, "(every shard)", ""},
		want{"keys", redisprobe.StatusOK, "share a hash tag", ""},
		want{"client settings", redisprobe.StatusOK, "", ""})

	// A budget below the round trip is a failure.
	rep = redisprobe.Run(context.Background(), c, time.Nanosecond)
	expect(t, rep, want{"round trip", redisprobe.StatusFailure, "over the budget of 1ns", "run the app nearer Redis"})
}

// The findings follow the server's configuration: persistence, the
// eviction policy, and commands that are refused, each by a real
// redis-server configured so (a command renamed to "" is refused, inside
// scripts too, as a managed offering may refuse it).
func TestFollowsTheServersConfig(t *testing.T) {
	redistest.Require(t)
	cases := []struct {
		name   string
		config []string
		setup  func(t *testing.T, c *redis.Client)
		wants  []want
	}{
		{"aof", []string{"appendonly yes"}, nil,
			[]want{{"persistence", redisprobe.StatusOK, "AOF on", ""}}},
		{"rdb snapshot", []string{`save "3600 1"`}, bgsave,
			[]want{{"persistence", redisprobe.StatusOK, "RDB snapshots", ""}}},
		{"allkeys-lru", []string{"maxmemory 100mb", "maxmemory-policy allkeys-lru"}, nil,
			[]want{
				{
					"eviction",
					redisprobe.StatusFailure,
					"maxmemory-policy allkeys-lru (maxmemory 100.00M)",
					"set maxmemory-policy noeviction",
				},
			}},
		{"volatile-ttl", []string{"maxmemory 100mb", "maxmemory-policy volatile-ttl"}, nil,
			[]want{
				{
					"eviction",
					redisprobe.StatusFailure,
					"volatile-* policies evict them too",
					"set maxmemory-policy noeviction",
				},
			}},
		{"allkeys-lru without maxmemory", []string{"maxmemory-policy allkeys-lru"}, nil,
			[]want{
				{"eviction", redisprobe.StatusWarning, "nothing is evicted now", "set maxmemory-policy noeviction"},
			}},
		{"TIME refused", []string{`rename-command TIME ""`}, nil, []want{
			{
				"server time",
				redisprobe.StatusFailure,
				"a script cannot read TIME: ERR Unknown Redis command called from script",
				"storeredis.WithClientTime()",
			},
			{"clock", redisprobe.StatusOK, "INFO's server_time_usec is", ""},
			{"keys", redisprobe.StatusOK, "", ""},
		}},
		{"EVALSHA refused", []string{`rename-command EVALSHA ""`}, nil,
			[]want{
				{
					"scripts",
					redisprobe.StatusFailure,
					"EVALSHA is refused: ERR unknown command 'evalsha'",
					"allow EVALSHA",
				},
			}},
		{"INFO refused", []string{`rename-command INFO ""`}, nil, []want{
			{"server", redisprobe.StatusWarning, "INFO refused", "ACL +info"},
			{"persistence", redisprobe.StatusWarning, "unknown: INFO refused", ""},
			{"eviction", redisprobe.StatusWarning, "unknown: INFO refused", ""},
			{"server time", redisprobe.StatusOK, "", ""},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := redistest.Start(tc.config...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(srv.Stop)
			c := safeClient(t, srv.Addr)
			if tc.setup != nil {
				tc.setup(t, c)
			}
			expect(t, redisprobe.Run(context.Background(), c, time.Second), tc.wants...)
		})
	}
}

// bgsave takes an RDB snapshot and waits for it.
func bgsave(t *testing.T, c *redis.Client) {
	ctx := context.Background()
	if err := c.BgSave(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if redisinfo.Field(info, "rdb_bgsave_in_progress") == "0" && redisinfo.Field(info, "rdb_saves") != "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("BGSAVE did not finish: %s", info)
		}
	}
}

// On a ClusterClient every master answers and is checked; a single-node
// client on a cluster node is a failure; a master that does not answer is
// named.
func TestCluster(t *testing.T) {
	cl := redistest.SharedCluster(t)
	rep := redisprobe.Run(context.Background(), safeClusterClient(t, cl.Addrs()), time.Second)
	expect(t, rep,
		want{"server", redisprobe.StatusOK, "on 3 masters", ""},
		want{"cluster", redisprobe.StatusOK, "Redis Cluster: 3 masters, each answers", ""},
		want{"persistence", redisprobe.StatusWarning, "(every master)", "appendonly yes"},
		want{"keys", redisprobe.StatusOK, "share a hash tag", ""},
		want{"server time", redisprobe.StatusOK, "", ""},
		// A ClusterClient resends on MaxRedirects, which the store's own
		// request IDs make safe: nothing to change.
		want{"client settings", redisprobe.StatusOK, "no setting lets a decision outlast", ""},
	)
	if got, want := rep.Worst(), redisprobe.StatusWarning; got != want {
		t.Errorf("worst status: got %v, want %v:\n%s", got, want, report(rep))
	}

	rep = redisprobe.Run(context.Background(), safeClient(t, cl.Addrs()[0]), time.Second)
	expect(t, rep, want{"cluster", redisprobe.StatusFailure, "cluster_enabled:1", "use a *redis.ClusterClient"})

	// A ClusterClient on a standalone server.
	rep = redisprobe.Run(
		context.Background(),
		safeClusterClient(t, []string{redistest.Standalone(t).Addr}),
		time.Second,
	)
	expect(t, rep, want{"cluster", redisprobe.StatusFailure, "not a Redis Cluster", "use a *redis.Client"})

	t.Run("dead master", func(t *testing.T) {
		redistest.SkipShort(t, "a Redis Cluster of its own")
		own, err := redistest.StartCluster(3)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(own.Stop)
		c := safeClusterClient(t, own.Addrs())
		if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
			return n.Ping(ctx).Err()
		}); err != nil {
			t.Fatal(err)
		}
		dead := own.Servers[2]
		dead.Stop()
		rep := redisprobe.Run(context.Background(), c, time.Second)
		expect(t, rep,
			want{"cluster", redisprobe.StatusFailure, "master " + dead.Addr + " does not answer", "its keys fail"},
			want{"server", redisprobe.StatusOK, "on 2 masters", ""},
		)
	})
}

// A server that cannot be reached, or refuses the credentials, is one
// failure; nothing else is asked of it, and the client's settings are
// still checked.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	rep := redisprobe.Run(context.Background(), safeClient(t, closed), 100*time.Millisecond)
	if len(rep.Findings) != 2 {
		t.Errorf("got %d findings, want the server's and the client's:\n%s", len(rep.Findings), report(rep))
	}
	expect(t, rep, want{"server", redisprobe.StatusFailure, "unreachable: dial tcp " + closed, "check the address"},
		want{"client settings", redisprobe.StatusOK, "", ""})

	redistest.Require(t)
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	if err := safeClient(t, srv.Addr).ConfigSet(context.Background(), "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	rep = redisprobe.Run(context.Background(), safeClient(t, srv.Addr), 100*time.Millisecond)
	expect(t, rep, want{"server", redisprobe.StatusFailure, "authentication failed: NOAUTH", "password"})
}
