package replay

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"

	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
)

// TestMain stops the Redis and PostgreSQL servers the tests shared.
func TestMain(m *testing.M) {
	code := redistest.Main(m)
	pgtest.StopShared()
	os.Exit(code)
}

// The same comparison on a real Redis and a real cluster: the decisions
// match the memory store's, each takes one round trip, and memory and
// commands are measured.
func TestRealRedisTargets(t *testing.T) {
	w, err := workload.Builtin("boundary", 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	standalone, err := DialRedis(ctx, redistest.Standalone(t).Addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer standalone.Close()
	cluster, err := DialRedis(ctx, "", redistest.SharedCluster(t).Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	rep, err := Compare(ctx, Config{
		Workloads: []*workload.Workload{w}, Algorithms: AlgorithmNames,
		Targets: []Target{Memory{}, standalone, cluster},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Rows {
		for _, s := range r.Stores[1:] {
			if s.RoundTripsPerDecision < 1 || s.RoundTripsPerDecision > 1.01 {
				t.Errorf("%s on %s: %.3f round trips per decision, want 1", r.Algorithm, s.Target, s.RoundTripsPerDecision)
			}
			if s.BytesPerKey == nil || *s.BytesPerKey <= 0 {
				t.Errorf("%s on %s: no memory measured", r.Algorithm, s.Target)
			}
			// The workload has one key, which MEMORY USAGE is asked about.
			if s.KeysHeld != 1 {
				t.Errorf("%s on %s: memory measured over %d keys, want 1", r.Algorithm, s.Target, s.KeysHeld)
			}
			if s.CommandsPerDecision == nil || *s.CommandsPerDecision < 1 {
				t.Errorf("%s on %s: commands per decision %v, want >= 1", r.Algorithm, s.Target, s.CommandsPerDecision)
			}
		}
	}
}

func TestUnreachableRedis(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := DialRedis(context.Background(), addr, nil); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("DialRedis(%s) with nothing listening: got %v, want store.ErrUnavailable", addr, err)
	}
}
