package storeredis_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// TestDifferential feeds the same random sequences of times (forward, equal,
// a little and whole windows backward), costs (0 or -n to inspect, up to the
// limit), refunds of earlier admissions (in full or in part) and parameters
// (across the whole range, with the limit, and for the token bucket and
// GCRA the rate count and burst, changing while the key holds state, so
// that every kind of decision converts a rate) to the Go decision step and
// to the Lua script, and requires identical Results, field by field. No
// rounding differs: both compute exactly in integer microseconds.
func TestDifferential(t *testing.T) {
	targets := []struct {
		name string
		// realTTL: keys expire on Redis's own clock while the test drives a
		// fake one, so the sequence must keep them from expiring early.
		realTTL bool
		client  func(t *testing.T) redis.Scripter
	}{
		{"redis", true, func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) }},
		{"miniredis", false, func(t *testing.T) redis.Scripter { return newClient(t, miniredis.RunT(t).Addr()) }},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			s := storeredis.New(target.client(t), storeredis.WithClientTime())
			difftest.Run(t, s, algorithms.Kinds(), sequencesOn(target.name, difftest.Sequences), testKey(t), target.realTTL)
		})
	}
}
