package storepostgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/difftest"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/storepostgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// runID keeps keys of different runs apart on the shared server.
var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

func testKey(t *testing.T) string { return "test:" + runID + ":" + t.Name() }

// newPool returns a pool on the package's shared server.
func newPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pgtest.Require(t)
	p, err := pgxpool.New(context.Background(), pgtest.Shared(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// ownServer starts a server for one test, which it stops when the test
// ends, and returns it with a pool on it.
func ownServer(t *testing.T) (*pgtest.Server, *pgxpool.Pool) {
	t.Helper()
	pgtest.Require(t)
	srv, err := pgtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	pool, err := pgxpool.New(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return srv, pool
}

// kinds are the kinds a test runs: every registered one, or those named
// in RATEWISE_PG_KINDS.
func kinds(t *testing.T) []*algorithms.Kind {
	only := os.Getenv("RATEWISE_PG_KINDS")
	if only == "" {
		return algorithms.Kinds()
	}
	var ks []*algorithms.Kind
	for _, name := range strings.Split(only, ",") {
		k, err := algorithms.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	return ks
}

// TestDifferential holds the store, statement and table included, to the
// Go steps on the differential sequences (internal/testkit/difftest): 10,000 steps
// per algorithm, with stale and backward times, inspections, refunds of
// any part of an admission and limits that change while a key holds state.
// Rows expire on the server's real clock while the sequences drive a fake
// one, as keys on Redis do.
func TestDifferential(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	difftest.Run(t, s, kinds(t), sequences(difftest.Sequences), testKey(t), true)
}

// TestDifferentialSets and TestDifferentialReservations hold the set
// driver, and the bookings and refunds, to the memory store's Go steps
// (difftest.Sets, difftest.Reservations).
func TestDifferentialSets(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	difftest.Sets(t, s, testKey(t), sequences(30))
}

func TestDifferentialReservations(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	difftest.Reservations(t, s, testKey(t), sequences(40))
}

// TestDifferentialLeases holds the lease driver (<kind>_lease) and the
// reset that puts a lease's mark back to the memory store's Go side
// (difftest.Leases).
func TestDifferentialLeases(t *testing.T) {
	s := storepostgres.New(newPool(t), storepostgres.WithClientTime())
	difftest.Leases(t, s, testKey(t), sequences(40))
}

// sequences is n, or a quarter of it under go test -short.
func sequences(n int) int {
	if testing.Short() {
		return n / 4
	}
	return n
}
