package contract_test

import (
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	contract "github.com/ratewise/ratewise/contract_test"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
	"github.com/ratewise/ratewise/storeredis/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// TestContract runs the conformance suite against every store in the repo.
// A new store is one more line here. The Redis targets decide with the
// suite's clock (WithClientTime); real Redis is started by the test on free
// loopback ports.
func TestContract(t *testing.T) {
	targets := []struct {
		name string
		new  contract.Factory
	}{
		{"storememory", func(*testing.T) store.Store { return storememory.New() }},
		// Not a product: keeps state forever, so the algorithms are checked
		// without expiry covering for them.
		{"reference", func(*testing.T) store.Store { return newReferenceStore() }},
		{"storeredis/miniredis", func(t *testing.T) store.Store {
			return storeredis.New(client(t, miniredis.RunT(t).Addr()), storeredis.WithClientTime())
		}},
		{"storeredis/redis", func(t *testing.T) store.Store {
			return storeredis.New(client(t, redistest.Standalone(t).Addr), storeredis.WithClientTime())
		}},
		{"storeredis/cluster", func(t *testing.T) store.Store {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
			t.Cleanup(func() { c.Close() })
			return storeredis.New(c, storeredis.WithClientTime())
		}},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) { contract.Run(t, target.new) })
	}
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}
