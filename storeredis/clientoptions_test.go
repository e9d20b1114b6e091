package storeredis_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// clientKinds build a client of each kind ClientOptions takes, on options
// from it for budget, on addrs (nothing listens on the default ones).
var clientKinds = []struct {
	name string
	new  func(addrs []string, budget time.Duration) redis.UniversalClient
}{
	{"standalone", func(addrs []string, budget time.Duration) redis.UniversalClient {
		return redis.NewClient(storeredis.ClientOptions(&redis.Options{Addr: addrs[0]}, budget))
	}},
	{"cluster", func(addrs []string, budget time.Duration) redis.UniversalClient {
		return redis.NewClusterClient(storeredis.ClientOptions(&redis.ClusterOptions{Addrs: addrs}, budget))
	}},
	{"sentinel", func(addrs []string, budget time.Duration) redis.UniversalClient {
		return redis.NewFailoverClient(
			storeredis.ClientOptions(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: addrs}, budget),
		)
	}},
	{"ring", func(addrs []string, budget time.Duration) redis.UniversalClient {
		return redis.NewRing(
			storeredis.ClientOptions(&redis.RingOptions{Addrs: map[string]string{"a": addrs[0]}}, budget),
		)
	}},
}

// A client of every kind on ClientOptions's settings passes CheckClient
// against the budget they were made for, over the whole range of budgets;
// a budget of 0 or less is the documented default, and one under a
// millisecond a millisecond.
func TestClientOptionsPassCheckClient(t *testing.T) {
	for _, tc := range []struct {
		name          string
		budget, as    time.Duration // given, and what CheckClient must accept
		read          time.Duration // the ReadTimeout it sets
		dial, dialGap time.Duration
	}{
		{"100ms", 100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, 40 * time.Millisecond,
			10 * time.Millisecond},
		{"zero is the default", 0, 500 * time.Millisecond, 500 * time.Millisecond, 200 * time.Millisecond,
			50 * time.Millisecond},
		{"negative is the default", -time.Second, 500 * time.Millisecond, 500 * time.Millisecond,
			200 * time.Millisecond, 50 * time.Millisecond},
		{"1ms", time.Millisecond, time.Millisecond, time.Millisecond, 400 * time.Microsecond, 100 * time.Microsecond},
		{"under 1ms is 1ms", 100, time.Millisecond, time.Millisecond, 400 * time.Microsecond, 100 * time.Microsecond},
		{"an odd budget", 333*time.Millisecond + 7, 333*time.Millisecond + 7, 333*time.Millisecond + 7,
			133200000, 33300000},
		{"an hour", time.Hour, time.Hour, time.Hour, 24 * time.Minute, 6 * time.Minute},
		{"the largest", math.MaxInt64, math.MaxInt64, math.MaxInt64, math.MaxInt64 / 10 * 4, math.MaxInt64 / 10},
	} {
		for _, kind := range clientKinds {
			t.Run(tc.name+"/"+kind.name, func(t *testing.T) {
				c := kind.new([]string{"127.0.0.1:1"}, tc.budget)
				t.Cleanup(func() { c.Close() })
				for _, w := range storeredis.CheckClient(c, tc.as) {
					t.Errorf("CheckClient(client, %v) warned: %v", tc.as, w)
				}
				if o, ok := c.(*redis.Client); ok && kind.name == "standalone" {
					o := o.Options()
					if o.ReadTimeout != tc.read || o.DialTimeout != tc.dial || o.DialerRetryTimeout != tc.dialGap {
						t.Errorf("ReadTimeout, DialTimeout, DialerRetryTimeout: got %v, %v, %v, want %v, %v, %v",
							o.ReadTimeout, o.DialTimeout, o.DialerRetryTimeout, tc.read, tc.dial, tc.dialGap)
					}
				}
			})
		}
	}
}

// ClientOptions sets only the fields it documents, on a copy: the
// caller's options keep what they held, and every other field is copied.
func TestClientOptionsKeepTheRest(t *testing.T) {
	tlsConfig := &tls.Config{ServerName: "redis.example"}
	given := &redis.Options{
		Addr: "redis.example:6380", Username: "app", Password: "secret", DB: 3, TLSConfig: tlsConfig,
		PoolSize: 7, ReadTimeout: time.Minute, MaxRetries: 5,
	}
	got := storeredis.ClientOptions(given, 100*time.Millisecond)
	if got == given {
		t.Fatal("ClientOptions returned the caller's options, not a copy")
	}
	if given.ReadTimeout != time.Minute || given.MaxRetries != 5 || given.ContextTimeoutEnabled {
		t.Errorf("the caller's options changed: ReadTimeout %v, MaxRetries %d, ContextTimeoutEnabled %v",
			given.ReadTimeout, given.MaxRetries, given.ContextTimeoutEnabled)
	}
	if got.Addr != given.Addr || got.Username != "app" || got.Password != "secret" || got.DB != 3 ||
		got.TLSConfig != tlsConfig || got.PoolSize != 7 {
		t.Errorf("fields ClientOptions does not set changed: Addr %q, Username %q, DB %d, PoolSize %d, TLS kept %v",
			got.Addr, got.Username, got.DB, got.PoolSize, got.TLSConfig == tlsConfig)
	}
	if !got.ContextTimeoutEnabled || got.MaxRetries != -1 || got.ReadTimeout != 100*time.Millisecond ||
		got.WriteTimeout != 100*time.Millisecond || got.PoolTimeout != 100*time.Millisecond ||
		got.DialerRetries != 1 {
		t.Errorf("the fields ClientOptions documents: ContextTimeoutEnabled %v, MaxRetries %d, ReadTimeout %v, "+
			"WriteTimeout %v, PoolTimeout %v, DialerRetries %d", got.ContextTimeoutEnabled, got.MaxRetries,
			got.ReadTimeout, got.WriteTimeout, got.PoolTimeout, got.DialerRetries)
	}

	cluster := &redis.ClusterOptions{Addrs: []string{"a:1", "b:2"}, MaxRedirects: 8, ClusterStateReloadInterval: time.Hour}
	gotCluster := storeredis.ClientOptions(cluster, 100*time.Millisecond)
	if gotCluster.MaxRedirects != 8 || len(gotCluster.Addrs) != 2 ||
		gotCluster.ClusterStateReloadInterval != time.Second || cluster.ClusterStateReloadInterval != time.Hour {
		t.Errorf("cluster options: MaxRedirects %d, Addrs %v, ClusterStateReloadInterval %v (given %v, now %v)",
			gotCluster.MaxRedirects, gotCluster.Addrs, gotCluster.ClusterStateReloadInterval, time.Hour,
			cluster.ClusterStateReloadInterval)
	}
}

// A nil options value is an empty one, not a panic.
func TestClientOptionsNil(t *testing.T) {
	o := storeredis.ClientOptions[*redis.Options](nil, 0)
	if o == nil {
		t.Fatal("ClientOptions(nil, 0) returned nil")
	}
	if !o.ContextTimeoutEnabled || o.ReadTimeout != 500*time.Millisecond || o.Addr != "" {
		t.Fatalf("ClientOptions(nil, 0): ContextTimeoutEnabled %v, ReadTimeout %v, Addr %q",
			o.ContextTimeoutEnabled, o.ReadTimeout, o.Addr)
	}
	if c := storeredis.ClientOptions[*redis.ClusterOptions](nil, time.Second); c == nil ||
		c.ClusterStateReloadInterval != time.Second {
		t.Fatalf("ClientOptions[*redis.ClusterOptions](nil, 1s): got nil or ClusterStateReloadInterval other than 1s")
	}
	if storeredis.ClientOptions[*redis.FailoverOptions](nil, 0) == nil ||
		storeredis.ClientOptions[*redis.RingOptions](nil, 0) == nil {
		t.Fatal("ClientOptions(nil, 0) returned nil")
	}
}

// On a real server and a real Cluster, a store on ClientOptions's client
// hears no warning from New, and decides.
func TestClientOptionsOnServers(t *testing.T) {
	const budget = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
		kind  int // in clientKinds
	}{
		{"standalone", func(t *testing.T) []string { return []string{redistest.Standalone(t).Addr} }, 0},
		{"cluster", func(t *testing.T) []string { return redistest.SharedCluster(t).Addrs() }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := clientKinds[tc.kind].new(tc.addrs(t), budget)
			t.Cleanup(func() { c.Close() })
			var warned []error
			s := storeredis.New(c, storeredis.WithWarnings(budget, func(err error) { warned = append(warned, err) }))
			t.Cleanup(func() { s.Close() })
			if len(warned) > 0 {
				t.Fatalf("New warned of ClientOptions's client: %v", errors.Join(warned...))
			}
			l, err := ratewise.New(s, algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 2})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for i := range 20 { // keys in many slots, on every master
				key := fmt.Sprintf("%s:%d", testKey(t), i)
				for j, want := range []bool{true, true, false} {
					res, err := l.Allow(ctx, key)
					if err != nil {
						t.Fatalf("Allow(%q) #%d: %v", key, j+1, err)
					}
					if res.Allowed != want {
						t.Fatalf("Allow(%q) #%d: allowed %v, want %v", key, j+1, res.Allowed, want)
					}
				}
			}
		})
	}
}
