package storememory

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
)

// TestLongKeysBounded: a key longer than longkey.Threshold is kept under a
// digest of 32 bytes, for its state, its once records and its mark, and
// that digest depends on the store's secret, so that no caller can choose
// a short key that spells it. The contract's long_keys rule checks that
// every such key decides as it should.
func TestLongKeysBounded(t *testing.T) {
	ctx := context.Background()
	s := New()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 5}
	now := time.Now()
	for _, n := range []int{longkey.Threshold, longkey.Threshold + 1, 65_536} {
		k := store.Key{Namespace: "ns", Name: strings.Repeat("k", n-len("ns:"))}
		id := func(op string) context.Context { // an ID of the longest for each request
			return ratewise.WithRequestID(ctx, op+strings.Repeat("i", requestid.MaxLen-len(op)))
		}
		res, err := s.Decide(id("decide"), k, alg, now, 1)
		if err != nil || !res.Allowed {
			t.Fatalf("%d bytes: Decide: %+v, %v", n, res, err)
		}
		if _, _, err := s.Lease(id("lease"), k, alg, now, 2, time.Second); err != nil {
			t.Fatalf("%d bytes: Lease: %v", n, err)
		}
		if err := s.Reset(id("reset"), k, alg); err != nil {
			t.Fatalf("%d bytes: Reset: %v", n, err)
		}
	}
	var states, onces, marks int
	for i := range s.shards {
		sh := &s.shards[i]
		for _, tb := range sh.tables {
			for pos := range tb.n {
				states = max(states, len(tb.at(pos).key))
			}
		}
		for k := range sh.once.m {
			onces = max(onces, len(k.key))
		}
		if sh.marks != nil {
			for k := range sh.marks.m {
				marks = max(marks, len(k.key))
			}
		}
	}
	if states != longkey.Threshold || onces != longkey.Threshold || marks != longkey.Threshold {
		t.Errorf(
			"the longest keys kept: %d of states, %d of once records, %d of marks; want each %d, the longest kept whole",
			states,
			onces,
			marks,
			longkey.Threshold,
		)
	}
	long := store.Key{Name: strings.Repeat("k", longkey.Threshold+1)}
	if a, b := s.kept(long), New().kept(long); len(a.Name) != 32 || a.Namespace != "" || a == b {
		t.Errorf("a long key is kept as %q, and as %q by another store: want 32 bytes, another store's own", a, b)
	}
}
