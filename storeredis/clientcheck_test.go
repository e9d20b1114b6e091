package storeredis_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/storeredis"
)

// CheckClient names every setting of go-redis's defaults that lets a
// decision outlast its budget, charge twice or miss a failover, and none of
// the settings docs/redis.md recommends. No server is needed: it reads the
// client's options.
func TestCheckClient(t *testing.T) {
	budget := 100 * time.Millisecond
	warned := func(c redis.Scripter) string {
		var out []string
		for _, w := range storeredis.CheckClient(c, budget) {
			if !strings.HasPrefix(w.Error(), "storeredis: unsafe client setting: ") {
				t.Errorf("warning %v does not start as CheckClient's doc says", w)
			}
			out = append(out, w.Error())
		}
		return strings.Join(out, "\n")
	}
	defaults := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer defaults.Close()
	got := warned(defaults)
	for _, want := range []string{
		"ContextTimeoutEnabled is false", "ReadTimeout is", "WriteTimeout is", "DialTimeout is 5s", "PoolTimeout is",
		"MaxRetries is 3",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("go-redis's defaults: no warning saying %q in\n%s", want, got)
		}
	}

	safe := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
	defer safe.Close()
	if got := warned(safe); got != "" {
		t.Errorf("recommended settings warned:\n%s", got)
	}

	cluster := redis.NewClusterClient(
		&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
			WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
			DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond},
	)
	defer cluster.Close()
	if got := warned(cluster); !strings.Contains(got, "ClusterStateReloadInterval is 1m0s") ||
		strings.Count(got, "\n") != 0 {
		t.Errorf("a cluster client reloading its slots every minute: got\n%s", got)
	}

	cluster.Close()
	reloading := redis.NewClusterClient(
		&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
			WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
			DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond, ClusterStateReloadInterval: time.Second},
	)
	defer reloading.Close()
	// A ClusterClient resends on MaxRedirects whatever MaxRetries says; the
	// store gives every write an ID, so that is nothing to warn of.
	if got := warned(reloading); got != "" {
		t.Errorf("a cluster client reloading its slots every second: got\n%s", got)
	}

	var heard []error
	storeredis.New(defaults, storeredis.WithWarnings(budget, func(err error) { heard = append(heard, err) }))
	if len(heard) != len(storeredis.CheckClient(defaults, budget)) {
		t.Errorf(
			"WithWarnings reported %d warnings, CheckClient %d",
			len(heard),
			len(storeredis.CheckClient(defaults, budget)),
		)
	}
	if o := defaults.Options(); o.ContextTimeoutEnabled || o.MaxRetries != 3 {
		t.Errorf("New changed the client's options: %+v", o)
	}
}
