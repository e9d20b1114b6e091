package storeredis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/longkey"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestLongKeysBounded decides on keys of up to 64 KiB, with request IDs
// (go-redis's default client also makes its own), refunds, resets with IDs
// and leases, and checks that no key the store writes, of states, marks or
// once records, is much longer than longkey.Threshold, and that a key
// longer than it is kept under its digest. The contract's long_keys rule
// checks that every such key decides as it should.
func TestLongKeysBounded(t *testing.T) {
	ctx := context.Background()
	rdb := newClient(t, redistest.Standalone(t).Addr)
	prefix := "bounded:" + runID + ":"
	s := storeredis.New(
		rdb,
		storeredis.WithClientTime(),
		storeredis.WithKeyPrefix(prefix),
		storeredis.WithWarnings(0, nil),
	)
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	now := time.Now()
	for _, n := range []int{longkey.Threshold, longkey.Threshold + 1, 10_000, 65_536} {
		k := store.Key{Name: strings.Repeat("{", n)} // escaped, each brace takes 3 bytes
		id := func(op string) context.Context {      // an ID of the longest for each request
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
		if digest := strings.Contains(s.Key(k.String(), alg), "{%sha256:"); digest != (n > longkey.Threshold) {
			t.Errorf("%d bytes: kept under a digest %v, want %v", n, digest, n > longkey.Threshold)
		}
	}
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, k := range keys {
		longest = max(longest, len(k))
	}
	// A key kept whole is escaped: a threshold of braces takes three
	// times as many bytes; then the prefix, kind and scope, a once
	// record's kind and an ID.
	if limit := 3*longkey.Threshold + 128 + requestid.MaxLen; len(keys) == 0 || longest > limit {
		t.Errorf("%d keys, the longest of %d bytes, want at most %d", len(keys), longest, limit)
	}
	t.Logf("%d keys, the longest of %d bytes", len(keys), longest)
}
