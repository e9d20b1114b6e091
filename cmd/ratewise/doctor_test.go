package main

import (
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// row matches a report row: the check, its status and the start of what
// was found, with the columns' padding.
func row(check, status, found string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(check) + ` +` + status + ` +` + regexp.QuoteMeta(found))
}

// doctor prints one row per check and what to change under it; a warning
// alone exits 0, a failure 1.
func TestDoctor(t *testing.T) {
	redistest.SkipShort(t, "doctor on five servers and a Redis Cluster")
	redistest.Require(t)
	plain, err := redistest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plain.Stop)
	evicting, err := redistest.Start("maxmemory 100mb", "maxmemory-policy allkeys-lru")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(evicting.Stop)
	cluster, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	cases := []struct {
		name string
		args []string
		code int
		// says are rows or phrases the output must hold.
		says []any
	}{
		{"warnings only", []string{"doctor", "--redis", plain.Addr}, 0, []any{
			"Checked the Redis at " + plain.Addr + " for ratewise's Redis store, with a budget of 100ms",
			row(
				"server",
				"ok",
				"Redis ",
			), row("scripts", "ok", "EVAL and EVALSHA"), row("server time", "ok", "a script reads TIME"),
			row("persistence", "warning", "no AOF"), "change: if a reset limit is costly",
			row("client settings", "ok", "the doctor's own client, not your app's"),
			"storeredis.CheckClient(rdb, budget)", "DialTimeout 30ms", "no failure, 1 warning.",
		}},
		{"eviction fails", []string{"doctor", "--redis", "redis://" + evicting.Addr, "--budget", "1s"}, 1, []any{
			"Checked the Redis at redis://" + evicting.Addr, "with a budget of 1s",
			row("eviction", "failure", "maxmemory-policy allkeys-lru"),
			"change: set maxmemory-policy noeviction", "DialTimeout 300ms", "1 failure, 1 warning.",
		}},
		{"cluster", []string{"doctor", "--cluster", strings.Join(cluster.Addrs(), ",")}, 0, []any{
			"Checked the Redis Cluster at ", row("cluster", "ok", "Redis Cluster: 3 masters, each answers"),
			row("client settings", "ok", "the doctor's own client, not your app's"), "no failure, 1 warning.",
		}},
		{"unreachable", []string{"doctor", "--redis", closed}, 1, []any{
			row("server", "failure", "unreachable: dial tcp "+closed), "1 failure, no warning.",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != c.code || stderr != "" {
				t.Errorf("exit %d, stderr %q; want exit %d, nothing on stderr", code, stderr, c.code)
			}
			for _, want := range c.says {
				switch w := want.(type) {
				case string:
					if !strings.Contains(stdout, w) {
						t.Errorf("output does not say %q:\n%s", w, stdout)
					}
				case *regexp.Regexp:
					if !w.MatchString(stdout) {
						t.Errorf("output has no row matching %q:\n%s", w, stdout)
					}
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				if len([]rune(line)) > doctorWidth {
					t.Errorf("line wider than %d: %q", doctorWidth, line)
				}
			}
		})
	}
}

// The doctor's client has the settings docs/redis.md recommends, which
// CheckClient passes, for any budget; but a ClusterClient's MaxRedirects,
// which only the store's request IDs make safe.
func TestDoctorClientPassesCheckClient(t *testing.T) {
	for _, budget := range []time.Duration{10 * time.Millisecond, 100 * time.Millisecond, 3 * time.Second} {
		for _, args := range [][2]string{{"127.0.0.1:1", ""}, {"", "127.0.0.1:1,127.0.0.1:2"}} {
			c, _, err := doctorClient(args[0], args[1], budget)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range storeredis.CheckClient(c, budget) {
				if !strings.Contains(w.Error(), "MaxRedirects") {
					t.Errorf("budget %v, %T: CheckClient warns %v", budget, c, w)
				}
			}
			c.Close()
		}
	}
}

func TestDoctorUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"no server", []string{"doctor"}, "ratewise doctor: give --redis, --cluster or --postgres: the store to check"},
		{
			"redis and postgres",
			[]string{"doctor", "--redis", "127.0.0.1:1", "--postgres", "postgres://127.0.0.1:2/db"},
			"--redis and --postgres: give only one",
		},
		{
			"budget on postgres",
			[]string{"doctor", "--postgres", "postgres://127.0.0.1:2/db", "--budget", "1s"},
			"--budget is for --redis and --cluster",
		},
		{
			"postgres password",
			[]string{"doctor", "--postgres", "postgres://:hunter2@127.0.0.1:port/db"},
			"--postgres: not a valid URL",
		},
		{
			"two servers",
			[]string{"doctor", "--redis", "127.0.0.1:1", "--cluster", "127.0.0.1:2"},
			"--redis and --cluster: give only one",
		},
		{"zero budget", []string{"doctor", "--redis", "127.0.0.1:1", "--budget", "0s"}, "--budget must be > 0, got 0s"},
		{
			"budget without a unit",
			[]string{"doctor", "--redis", "127.0.0.1:1", "--budget", "100"},
			`--budget "100": want a duration with a unit`,
		},
		{
			"redis without a port",
			[]string{"doctor", "--redis", "localhost"},
			`--redis "localhost": want host:port or a URL`,
		},
		{"password", []string{"doctor", "--redis", "redis://:hunter2@127.0.0.1:port"}, "--redis: not a valid URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, c.args...)
			if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.says) ||
				strings.Contains(stderr, "hunter2") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2 and one line saying %q", code, stdout, stderr, c.says)
			}
		})
	}
	code, stdout, _ := runCLI(t, "doctor", "help")
	if code != 0 || !strings.Contains(stdout, "storeredis.CheckClient(rdb, budget)") ||
		!strings.Contains(stdout, "--budget duration") {
		t.Errorf("doctor help: exit %d:\n%s", code, stdout)
	}
}
