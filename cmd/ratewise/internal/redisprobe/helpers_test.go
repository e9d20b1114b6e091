package redisprobe_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// newClient is a client with go-redis's defaults, which CheckClient warns
// of.
func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// safeClient is a client with the settings docs/redis.md recommends for a
// budget of 100ms.
func safeClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
	t.Cleanup(func() { c.Close() })
	return c
}

func safeClusterClient(t testing.TB, addrs []string) *redis.ClusterClient {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: 30 * time.Millisecond, ReadTimeout: 50 * time.Millisecond,
		WriteTimeout: 50 * time.Millisecond, PoolTimeout: 50 * time.Millisecond,
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
			t.Errorf(
				"%s: got %v, found %q, change %q; want %v, found ~%q, change ~%q",
				w.check,
				g.status,
				g.found,
				g.change,
				w.status,
				w.found,
				w.change,
			)
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
