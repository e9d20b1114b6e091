package storepostgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/longkey"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// TestLongKeysBounded decides on keys of up to 64 KiB, with request IDs,
// refunds, resets with IDs and leases, and checks that no row the store
// keeps, of states, marks or once records, has a key much longer than
// longkey.Threshold: what a key costs is bounded whatever its length. The
// contract's long_keys rule checks that every such key decides as it
// should.
func TestLongKeysBounded(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t)
	s := storepostgres.New(pool, storepostgres.WithClientTime())
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	now := time.Now()
	prefix := testKey(t) + ":"
	for _, n := range []int{longkey.Threshold, longkey.Threshold + 1, 3000, 10_000, 65_536} {
		// A key of n bytes, as store.Key.String spells it.
		k := store.Key{Namespace: "bounded", Name: prefix + strings.Repeat("k", n-len(prefix)-len("bounded:"))}
		id := func(op string) context.Context { // an ID of the longest for each request
			return ratewise.WithRequestID(ctx, op+strings.Repeat("i", requestid.MaxLen-len(op)))
		}
		res, err := s.Decide(id("decide"), k, alg, now, 1)
		if err != nil || !res.Allowed {
			t.Fatalf("%d bytes: Decide: %+v, %v", n, res, err)
		}
		if _, err := s.Refund(id("refund"), k, alg, now, res.At, 1); err != nil {
			t.Fatalf("%d bytes: Refund: %v", n, err)
		}
		if _, _, err := s.Lease(id("lease"), k, alg, now, 2, time.Second); err != nil {
			t.Fatalf("%d bytes: Lease: %v", n, err)
		}
		if err := s.Reset(id("reset"), k, alg); err != nil {
			t.Fatalf("%d bytes: Reset: %v", n, err)
		}
	}
	for _, table := range []string{"ratewise.state", "ratewise.once"} {
		var longest int
		err := pool.QueryRow(ctx, "SELECT coalesce(max(octet_length(key)), 0) FROM "+table).Scan(&longest)
		if err != nil {
			t.Fatal(err)
		}
		// The kind and scope, a once record's kind and length, an ID.
		if limit := longkey.Threshold + 64 + requestid.MaxLen; longest == 0 || longest > limit {
			t.Errorf("%s: the longest key is %d bytes, want (0, %d]", table, longest, limit)
		}
		t.Logf("%s: the longest key is %d bytes", table, longest)
	}
}
