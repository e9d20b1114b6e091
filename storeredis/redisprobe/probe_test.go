package redisprobe_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/redisinfo"
	"github.com/ratewise/ratewise/internal/redistest"
	"github.com/ratewise/ratewise/storeredis"
	"github.com/ratewise/ratewise/storeredis/redisprobe"
)

// safeClient is a client with the settings docs/redis.md recommends for a
// budget of 100ms.
func safeClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

func safeClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond, ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// checked is one check's findings merged: the worst status, and what each
// found and said to change, joined.
type checked struct {
	status        redisprobe.Status
	found, change string
	n             int
}

func byCheck(rep redisprobe.Report) map[string]checked {
	m := map[string]checked{}
	for _, f := range rep.Findings {
		c := m[f.Check]
		c.status = max(c.status, f.Status)
		c.found += f.Found + "\n"
		c.change += f.Change + "\n"
		c.n++
		m[f.Check] = c
	}
	return m
}

// want is what one check must have found: its status, and a phrase of
// what it found and of what it says to change.
type want struct {
	check         string
	status        redisprobe.Status
	found, change string
}

func expect(t *testing.T, rep redisprobe.Report, wants ...want) {
	t.Helper()
	got := byCheck(rep)
	for _, w := range wants {
		g, ok := got[w.check]
		if !ok {
			t.Errorf("no %q finding in the report:\n%s", w.check, report(rep))
			continue
		}
		if g.status != w.status || !strings.Contains(g.found, w.found) || !strings.Contains(g.change, w.change) {
			t.Errorf("%s: got %v, found %q, change %q; want %v, found ~%q, change ~%q", w.check, g.status, g.found, g.change, w.status, w.found, w.change)
		}
	}
}

func report(rep redisprobe.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintln(&b, f)
	}
	return b.String()
}

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
	if keys, err := c.Keys(context.Background(), storeredis.DefaultPrefix+"probe:*").Result(); err != nil || len(keys) > 0 {
		t.Errorf("the probe left keys %v (%v)", keys, err)
	}

	// A Ring asks each shard; its keys share a hash tag as on a cluster.
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": srv.Addr}, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond, WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
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
			[]want{{"eviction", redisprobe.StatusFailure, "maxmemory-policy allkeys-lru (maxmemory 100.00M)", "set maxmemory-policy noeviction"}}},
		{"volatile-ttl", []string{"maxmemory 100mb", "maxmemory-policy volatile-ttl"}, nil,
			[]want{{"eviction", redisprobe.StatusFailure, "volatile-* policies evict them too", "set maxmemory-policy noeviction"}}},
		{"allkeys-lru without maxmemory", []string{"maxmemory-policy allkeys-lru"}, nil,
			[]want{{"eviction", redisprobe.StatusWarning, "nothing is evicted now", "set maxmemory-policy noeviction"}}},
		{"TIME refused", []string{`rename-command TIME ""`}, nil, []want{
			{"server time", redisprobe.StatusFailure, "a script cannot read TIME: ERR Unknown Redis command called from script", "storeredis.WithClientTime()"},
			{"clock", redisprobe.StatusOK, "INFO's server_time_usec is", ""},
			{"keys", redisprobe.StatusOK, "", ""},
		}},
		{"EVALSHA refused", []string{`rename-command EVALSHA ""`}, nil,
			[]want{{"scripts", redisprobe.StatusFailure, "EVALSHA is refused: ERR unknown command 'evalsha'", "allow EVALSHA"}}},
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
	rep = redisprobe.Run(context.Background(), safeClusterClient(t, []string{redistest.Standalone(t).Addr}), time.Second)
	expect(t, rep, want{"cluster", redisprobe.StatusFailure, "not a Redis Cluster", "use a *redis.Client"})

	t.Run("dead master", func(t *testing.T) {
		redistest.SkipShort(t, "a Redis Cluster of its own")
		own, err := redistest.StartCluster(3)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(own.Stop)
		c := safeClusterClient(t, own.Addrs())
		if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
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

// go-redis's defaults raise CheckClient's warnings, each with the setting
// that passes; warnings alone are not a failure.
func TestClientSettings(t *testing.T) {
	budget := 100 * time.Millisecond
	c := newClient(t, redistest.Standalone(t).Addr)
	rep := redisprobe.Run(context.Background(), c, budget)
	got := byCheck(rep)["client settings"]
	if want := len(storeredis.CheckClient(c, budget)); got.n != want || want == 0 {
		t.Fatalf("client settings: %d findings, want CheckClient's %d:\n%s", got.n, want, report(rep))
	}
	for _, f := range rep.Findings {
		if f.Check != "client settings" {
			continue
		}
		if f.Status != redisprobe.StatusWarning || f.Change == "" || strings.Contains(f.Change, "see docs") || strings.HasPrefix(f.Found, "storeredis:") {
			t.Errorf("client setting %q: status %v, change %q; want a warning naming the setting to use", f.Found, f.Status, f.Change)
		}
	}
	for _, w := range []string{"ContextTimeoutEnabled: true", "MaxRetries: -1", "ReadTimeout: 50ms", "DialTimeout: 30ms"} {
		if !strings.Contains(got.change, w) {
			t.Errorf("client settings: no change says %q:\n%s", w, got.change)
		}
	}
	if rep.Worst() != redisprobe.StatusWarning {
		t.Errorf("worst status %v, want warning:\n%s", rep.Worst(), report(rep))
	}
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

// A Redis older than 5.0 refuses a script's write after TIME: the probe
// says to upgrade, or to use client time. No such Redis is at hand, so a
// fake server answers as Redis 4.0 does, with its error text.
func TestRedis4(t *testing.T) {
	addr := fakeRedis(t, fake{version: "4.0.14"})
	rep := redisprobe.Run(context.Background(), safeClient(t, addr), time.Second)
	expect(t, rep,
		want{"server", redisprobe.StatusFailure, "Redis 4.0.14", "upgrade to Redis 5.0 or later"},
		want{"scripts", redisprobe.StatusOK, "", ""},
		want{"keys", redisprobe.StatusOK, "", ""},
		want{"server time", redisprobe.StatusFailure, "a script that read TIME cannot write: ERR Error running script", "storeredis.WithClientTime()"},
		want{"clock", redisprobe.StatusOK, "Redis's clock is", ""},
	)
}

// A probe stops when its context ends, whichever check is under way, and
// says which.
func TestContext(t *testing.T) {
	addr := fakeRedis(t, fake{version: "4.0.14", stall: true})
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep := redisprobe.Run(ctx, c, time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the probe took %v after its context's 200ms", d)
	}
	expect(t, rep,
		want{"server", redisprobe.StatusFailure, "Redis 4.0.14", ""},
		want{"scripts", redisprobe.StatusFailure, "context deadline exceeded", "give the probe more time"})
	if _, ok := byCheck(rep)["keys"]; ok {
		t.Errorf("checks after the context ended ran:\n%s", report(rep))
	}

	cancel()
	rep = redisprobe.Run(ctx, c, time.Second)
	expect(t, rep, want{"server", redisprobe.StatusFailure, "not checked: the probe's context ended", ""})
}

// A proxy in front of a cluster that a *redis.Client reaches as one server
// refuses a script whose keys are in different slots: coalesced batches
// would fail there.
func TestProxyRefusesCrossSlot(t *testing.T) {
	addr := fakeRedis(t, fake{version: "7.2.4", crossSlot: true})
	expect(t, redisprobe.Run(context.Background(), safeClient(t, addr), time.Second),
		want{"server", redisprobe.StatusOK, "Redis 7.2.4", ""},
		want{"keys", redisprobe.StatusFailure, "cannot write keys of different hash slots, as a coalesced batch", "storeredis.WithCoalescing(0)"},
		want{"server time", redisprobe.StatusOK, "", ""})
}

// fake is how fakeRedis answers: the version INFO gives; with stall, a
// script gets no answer; with crossSlot, a script whose keys' hash tags
// differ is refused with CROSSSLOT, as by a proxy in front of a cluster.
// A server of a version before 5.0 refuses a write after TIME.
type fake struct {
	version          string
	stall, crossSlot bool
}

// fakeRedis serves the RESP2 protocol as far as the probe needs: INFO,
// EVAL and EVALSHA of scripts recognized by the commands they call, with
// Redis 4.0's error text for a write after TIME and Redis Cluster's for
// keys in different slots.
func fakeRedis(t *testing.T, f fake) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		scripts = map[string]string{}
		conns   sync.WaitGroup
		open    []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	info := "# Server\r\nredis_version:" + f.version + "\r\n\r\n# Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\r\n" +
		"# Persistence\r\naof_enabled:1\r\nrdb_last_bgsave_time_sec:-1\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n"
	tag := func(key string) string {
		_, rest, _ := strings.Cut(key, "{")
		tag, _, _ := strings.Cut(rest, "}")
		return tag
	}
	run := func(src string, keys []string) string {
		switch {
		case f.crossSlot && len(keys) > 1 && tag(keys[0]) != tag(keys[1]):
			return "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
		case strings.Contains(src, "redis.call('TIME')") && strings.Contains(src, "'SET'") && f.version < "5":
			sha := sha1.Sum([]byte(src))
			return "-ERR Error running script (call to f_" + hex.EncodeToString(sha[:]) + "): @user_script:1: @user_script: 1: " +
				"Write commands not allowed after non deterministic commands. Call redis.replicate_commands() at the start of your script " +
				"in order to switch to single commands replication mode.\r\n"
		case strings.Contains(src, "redis.call('TIME')") && !strings.Contains(src, "'SET'"):
			now := time.Now()
			return fmt.Sprintf("*2\r\n:%d\r\n:%d\r\n", now.Unix(), now.Nanosecond()/1000)
		case strings.Contains(src, "'SET'"):
			return ":" + strconv.Itoa(len(keys)) + "\r\n"
		}
		return ":1\r\n"
	}
	serve := func(c net.Conn) {
		defer conns.Done()
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			var reply string
			switch cmd := strings.ToUpper(args[0]); cmd {
			case "INFO":
				reply = fmt.Sprintf("$%d\r\n%s\r\n", len(info), info)
			case "PING":
				reply = "+PONG\r\n"
			case "EVAL", "EVALSHA":
				if f.stall {
					r.ReadByte() // blocks until the client gives up and closes
					return
				}
				src := args[1]
				mu.Lock()
				if cmd == "EVAL" {
					sha := sha1.Sum([]byte(src))
					scripts[hex.EncodeToString(sha[:])] = src
				} else {
					src = scripts[strings.ToLower(src)]
				}
				mu.Unlock()
				nkeys, _ := strconv.Atoi(args[2])
				if src == "" {
					reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
				} else {
					reply = run(src, args[3:3+nkeys])
				}
			default: // HELLO, which Redis 4.0 does not know, and the rest
				reply = fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			conns.Add(1)
			mu.Unlock()
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || !strings.HasPrefix(line, "*") || n < 1 {
		return nil, errors.New("not an array")
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
