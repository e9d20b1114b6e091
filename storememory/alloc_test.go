package storememory_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// A decision on a key the store holds allocates nothing, under every
// algorithm, admitted or denied, peeked at, on the store alone or through a
// limiter with a namespace: the state is updated where it lies, a packed
// one unpacked into memory the store owns, and the namespace is hashed and
// compared beside the key, not joined to it.
func TestDecisionsAllocateNothing(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, 1000, time.Minute, 10)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(k.String(), func(t *testing.T) {
			s := storememory.New()
			// The clock stands still: requests of a log share one record,
			// which its state then never outgrows.
			clock := ratewisetest.NewClock(t0)
			l, err := ratewise.New(s, alg, ratewise.WithNamespace("api"), ratewise.WithClock(clock))
			if err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"alice", "bob"} {
				if _, err := l.Allow(ctx, key); err != nil {
					t.Fatal(err)
				}
				if _, err := s.Decide(ctx, store.Key{Name: key}, alg, t0, 1); err != nil {
					t.Fatal(err)
				}
			}
			for _, tc := range []struct {
				name string
				run  func()
			}{
				{"limiter/admitted", func() { l.Allow(ctx, "alice") }},
				{"limiter/peek", func() { l.PeekN(ctx, "alice", 1) }},
				{"store/admitted", func() { s.Decide(ctx, store.Key{Name: "alice"}, alg, t0, 1) }},
				{"store/peek", func() { s.Decide(ctx, store.Key{Name: "alice"}, alg, t0, 0) }},
				{"limiter/denied", func() { l.Allow(ctx, "bob") }},
				{"store/denied", func() { s.Decide(ctx, store.Key{Name: "bob"}, alg, t0, 1) }},
			} {
				if strings.HasSuffix(tc.name, "denied") {
					// bob has used 1 of 1000 under each name: the rest,
					// then a few denials for the store to see he is hot.
					l.AllowN(ctx, "bob", 999)
					s.Decide(ctx, store.Key{Name: "bob"}, alg, t0, 999)
					for range 3 {
						tc.run()
					}
					if res, _ := l.PeekN(ctx, "bob", 1); res.Remaining != 0 {
						t.Fatalf("bob has %d left under the limiter, want 0", res.Remaining)
					}
					if res, _ := s.Decide(ctx, store.Key{Name: "bob"}, alg, t0, 0); res.Remaining != 0 {
						t.Fatalf("bob has %d left in the store, want 0", res.Remaining)
					}
				}
				if got := testing.AllocsPerRun(100, tc.run); got != 0 {
					t.Errorf("%s: %v allocations per run, want 0", tc.name, got)
				}
			}
		})
	}
}

// A key given in two parts is the key they join to: the same state,
// however it is split.
func TestKeyPartsAreTheJoinedKey(t *testing.T) {
	s := storememory.New()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	for _, step := range []struct {
		ns, name  string
		remaining int64
	}{
		{"", "api:v1:alice", 9},
		{"api", "v1:alice", 8},
		{"api:v1", "alice", 7},
		{"api:v1:alice", "", 9}, // "api:v1:alice:"
		{"a", "pi:v1:alice", 9},
		{"api", "bob", 9},
		{"", "api:v1:alicex", 9},
	} {
		res, err := s.Decide(ctx, store.Key{Namespace: step.ns, Name: step.name}, alg, t0, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Remaining != step.remaining {
			t.Fatalf("%q, %q: Remaining %d, want %d", step.ns, step.name, res.Remaining, step.remaining)
		}
	}
	at, _ := s.Decide(ctx, store.Key{Name: "api:v1:alice"}, alg, t0, 0)
	res, err := s.Refund(ctx, store.Key{Namespace: "api:v1", Name: "alice"}, alg, t0, at.At, 2)
	if err != nil || res.Remaining != 9 {
		t.Fatalf("Refund: %+v, %v; want Remaining 9", res, err)
	}
	if err := s.Reset(ctx, store.Key{Namespace: "api", Name: "v1:alice"}, alg); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Decide(ctx, store.Key{Name: "api:v1:alice"}, alg, t0, 0); res.Remaining != 10 {
		t.Fatalf("after a Reset split another way: %+v, want Remaining 10", res)
	}
	if n := s.Len(); n != 4 {
		t.Fatalf("%d entries, want 4: api:v1:alice:, a:pi:v1:alice, api:bob and api:v1:alicex", n)
	}
}
