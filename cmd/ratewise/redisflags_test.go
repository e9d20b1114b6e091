package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay"
)

// quickCompare are flags that make a compare run in a moment.
var quickCompare = []string{"compare", "--workload", "boundary", "--alg", "fixed_window", "--time", "0"}

// --redis and --cluster take a URL as well as addresses: credentials, a
// database, TLS and go-redis's options, with a dial timeout of 2s unless the
// URL sets one.
func TestRedisFlagsTakeURLs(t *testing.T) {
	opts, where, err := redisOptions("rediss://ann:s3cret@cache.example:6380/3?read_timeout=5s")
	if err != nil {
		t.Fatal(err)
	}
	if opts.Addr != "cache.example:6380" || opts.Username != "ann" || opts.Password != "s3cret" || opts.DB != 3 ||
		opts.TLSConfig == nil || opts.ReadTimeout != 5*time.Second || opts.DialTimeout != 2*time.Second {
		t.Errorf("--redis rediss://...: got %+v", opts)
	}
	if want := "rediss://ann:xxxxx@cache.example:6380/3?read_timeout=5s"; where != want {
		t.Errorf("--redis rediss://... shows as %q, want %q", where, want)
	}
	if opts, _, err := redisOptions("redis://127.0.0.1:6379?dial_timeout=5s"); err != nil ||
		opts.DialTimeout != 5*time.Second {
		t.Errorf("--redis with dial_timeout=5s: got %v, %v", opts, err)
	}
	if opts, where, err := redisOptions("127.0.0.1:6379"); err != nil || opts.Addr != "127.0.0.1:6379" ||
		where != "127.0.0.1:6379" ||
		opts.DialTimeout != 2*time.Second {
		t.Errorf("--redis host:port: got %+v, %q, %v", opts, where, err)
	}

	copts, where, err := clusterOptions("rediss://ann:s3cret@node1:7000?addr=node2:7001")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(copts.Addrs, ",") != "node1:7000,node2:7001" || copts.Password != "s3cret" ||
		copts.TLSConfig == nil ||
		copts.DialTimeout != 2*time.Second {
		t.Errorf("--cluster rediss://...: got %+v", copts)
	}
	if strings.Contains(where, "s3cret") {
		t.Errorf("--cluster shows as %q, with the password", where)
	}
	if copts, _, err := clusterOptions("node1:7000, node2:7001"); err != nil ||
		strings.Join(copts.Addrs, ",") != "node1:7000,node2:7001" {
		t.Errorf("--cluster seeds: got %v, %v", copts, err)
	}

	// Against a server that wants a password: the wrong one is an error
	// that does not show it; the right one, with a database, runs. The
	// password is set once the server runs: redistest waits for a server
	// that answers without one.
	redistest.Require(t)
	srv, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	err = admin.ConfigSet(context.Background(), "requirepass", "s3cret").Err()
	admin.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, append(quickCompare, "--redis", "redis://:hunter2@"+srv.Addr)...)
	if code != 2 || stdout != "" ||
		!strings.Contains(stderr, "ratewise compare: store unavailable: redis://:xxxxx@"+srv.Addr+": WRONGPASS") ||
		strings.Contains(stderr, "hunter2") {
		t.Errorf("wrong password: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, append(quickCompare, "--redis", "redis://:s3cret@"+srv.Addr+"/2")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "Measured on: the in-memory store and the Redis at redis://:xxxxx@" + srv.Addr +
		"/2 (redis "; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout does not start %q:\n%s", want, stdout)
	}
	if !strings.Contains(stdout, "redis B/key") {
		t.Errorf("no figures from Redis:\n%s", stdout)
	}
}

// With no store given, compare measures a throwaway redis-server of its own
// when redis-server is on the PATH, and says so.
func TestCompareStartsRedisByDefault(t *testing.T) {
	redistest.Require(t)
	code, stdout, stderr := runCLI(t, quickCompare...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if want := "Measured on: the in-memory store and a throwaway redis-server started for this run " +
		"(redis "; !strings.HasPrefix(first, want) {
		t.Errorf("first line %q does not start %q", first, want)
	}
	if !strings.Contains(stdout, "redis B/key") {
		t.Errorf("no figures from Redis:\n%s", stdout)
	}
}

// Without redis-server on the PATH, compare falls back on the embedded
// miniredis and recommend on the in-memory store, and the description that
// goes into their output says how each differs from Redis.
func TestStoreFallbackWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, stdout, stderr := runCLI(t, quickCompare...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	for _, want := range []string{"Measured on: the in-memory store and the embedded miniredis (redis-server " +
		"not found on PATH",
		"not Redis", "the same Lua scripts", "its memory is not Redis's", "its speed is no guide to Redis's"} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %q does not say %q", first, want)
		}
	}
	if !strings.Contains(stdout, "miniredis cmds") {
		t.Errorf("no figures from miniredis:\n%s", stdout)
	}

	cases := []struct {
		name string
		use  storeUse
		args []string
		want replay.Target
		// says are phrases the description must hold.
		says []string
	}{
		{
			"recommend",
			forRecommend,
			nil,
			replay.Memory{},
			[]string{
				"the in-memory store's Go heap (redis-server not found on PATH",
				"a sorted-set record costs several times more",
			},
		},
		{
			"recommend --memory-store",
			forRecommend,
			[]string{"--memory-store"},
			replay.Memory{},
			[]string{"the in-memory store's Go heap (--memory-store)"},
		},
		{
			"compare --memory-store",
			forCompare,
			[]string{"--memory-store"},
			replay.Memory{},
			[]string{"the in-memory store alone (--memory-store)"},
		},
		{
			"compare --miniredis",
			forCompare,
			[]string{"--miniredis"},
			replay.Miniredis{},
			[]string{"the embedded miniredis (--miniredis)"},
		},
		{
			"guide",
			forGuide,
			nil,
			nil,
			[]string{"the in-memory store and the embedded miniredis (redis-server not found on PATH"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rf storeFlags
			fs := newCommand("test", "", nil)
			rf.register(fs.FlagSet, "run", c.use)
			if err := fs.parse(c.args); err != nil {
				t.Fatal(err)
			}
			target, about, err := rf.open(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if target != c.want {
				t.Errorf("target: got %#v, want %#v", target, c.want)
			}
			for _, want := range c.says {
				if !strings.Contains(about, want) {
					t.Errorf("description %q does not say %q", about, want)
				}
			}
		})
	}
}
