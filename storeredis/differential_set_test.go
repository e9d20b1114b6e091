package storeredis_test

import (
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// scriptTargets are the servers the differential tests run scripts on: real
// Redis, the authority, and miniredis, which runs the same scripts in its
// own Lua interpreter (see sequencesOn).
var scriptTargets = map[string]func(t *testing.T) redis.Scripter{
	"redis":     func(t *testing.T) redis.Scripter { return newClient(t, redistest.Standalone(t).Addr) },
	"miniredis": func(t *testing.T) redis.Scripter { return newClient(t, miniredis.RunT(t).Addr()) },
}

// sequencesOn returns how many of a differential test's n sequences run on
// the named target: all of them on real servers and the memory store, and a
// quarter on miniredis, whose interpreter runs several times slower, a
// sixteenth under the race detector, which slows it tenfold more. That is
// enough to show that the scripts decide there as on Redis; Redis itself
// holds them to the Go steps on every sequence. go test -short runs a
// quarter of that.
func sequencesOn(target string, n int) int {
	if target == "miniredis" {
		n /= 4
		if race.Enabled {
			n = max(n/4, 1)
		}
	}
	if testing.Short() {
		n /= 4
	}
	return n
}

// TestDifferentialSets holds the Redis set script to the memory store's
// Go steps on random sets (difftest.Sets).
func TestDifferentialSets(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			difftest.Sets(t, storeredis.New(client(t), storeredis.WithClientTime()), testKey(t), sequencesOn(name, 30))
		})
	}
}

// TestDifferentialReservations holds the Redis reservation and refund
// scripts to the memory store's Go steps on random bookings, decisions and
// cancellations (difftest.Reservations).
func TestDifferentialReservations(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			difftest.Reservations(t, storeredis.New(client(t), storeredis.WithClientTime()), testKey(t), sequencesOn(name, 40))
		})
	}
}

// TestDifferentialLeases holds the lease driver (lease.lua) and the reset
// that puts a lease's mark back to the memory store's Go side on random
// leases, decisions, refunds and resets (difftest.Leases).
func TestDifferentialLeases(t *testing.T) {
	for name, client := range scriptTargets {
		t.Run(name, func(t *testing.T) {
			difftest.Leases(t, storeredis.New(client(t), storeredis.WithClientTime()), testKey(t), sequencesOn(name, 40))
		})
	}
}
