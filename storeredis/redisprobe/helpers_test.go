package redisprobe_test

import (
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// newClient is a client with go-redis's defaults, which CheckClient warns
// of.
func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}
