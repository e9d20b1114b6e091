package storememory

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// After a wave of keys has expired and been swept, a table that holds a
// quarter or less of what it held has an index and chunks of its present
// size: keeping the large ones would keep the wave's memory.
func TestSweepShrinksEmptiedTables(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratewisetest.NewClock(t0)
	s := New(WithClock(clock))
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	for i := range shardCount * 2 * minShrink {
		if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("wave:", i)}, alg, t0, 1); err != nil {
			t.Fatal(err)
		}
	}
	before := map[*shard]int{}
	for i := range s.shards {
		sh := &s.shards[i]
		if len(sh.tables) == 1 && sh.tables[0].n >= minShrink {
			before[sh] = len(sh.tables[0].index)
		}
	}
	if len(before) < shardCount/2 {
		t.Fatalf("only %d of %d shards hold %d entries", len(before), shardCount, minShrink)
	}
	// Three times as many decisions, an hour later, on 16 keys in each
	// shard (chosen so: keys spread at random leave some shards too few
	// decisions to sweep): every shard sweeps the expired wave.
	var live []string
	perShard := map[*shard]int{}
	for i := 0; len(live) < 16*shardCount; i++ {
		k := fmt.Sprint("live:", i)
		if sh := s.shard(s.hash("", k)); perShard[sh] < 16 {
			perShard[sh]++
			live = append(live, k)
		}
	}
	clock.Set(t0.Add(time.Hour))
	for i := range 3 * shardCount * 2 * minShrink {
		if _, err := s.Decide(ctx, store.Key{Name: live[i%len(live)]}, alg, t0.Add(time.Hour), 1); err != nil {
			t.Fatal(err)
		}
	}
	for sh, old := range before {
		tb := sh.tables[0]
		if tb.n > 64 {
			t.Fatalf("a shard still holds %d entries after the wave expired", tb.n)
		}
		if len(tb.index) >= old/4 {
			t.Fatalf(
				"a shard emptied by a sweep kept an index of %d slots for %d entries (%d before)",
				len(tb.index),
				tb.n,
				old,
			)
		}
		if want := (tb.n+chunkSize-1)/chunkSize + 1; len(tb.chunks) > want || cap(tb.chunks) > want {
			t.Fatalf(
				"a shard emptied by a sweep kept %d chunks (capacity %d) for %d entries",
				len(tb.chunks),
				cap(tb.chunks),
				tb.n,
			)
		}
	}
}

// Entries pack under one tag per table, the first rate count that wrote
// one; once no packed entry is left at a sweep, the tag goes, so that a
// changed rate count packs again rather than boxing every key for good.
func TestTagFollowsTheRateCount(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := ratewisetest.NewClock(t0)
	s := New(WithClock(clock))
	before := algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 10}
	after := algorithms.GCRA{Rate: algorithms.PerSecond(20), Burst: 10}
	key := sameShard(s, 1)[0]
	boxedNow := func() bool {
		c := s.shard(s.hash("", key)).find(s.hash("", key), "", key, after, s.seed, false)
		return c.pos >= 0 && c.t.at(c.pos).w[0] == boxed
	}
	if _, err := s.Decide(ctx, store.Key{Name: key}, before, t0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, store.Key{Name: key}, after, t0, 1); err != nil {
		t.Fatal(err)
	}
	if !boxedNow() {
		t.Fatal("a state of another rate count than the table's tag packed")
	}
	// An hour later, enough decisions for a sweep, which drops the key.
	later := t0.Add(time.Hour)
	clock.Set(later)
	for range minSweepOps {
		s.Decide(ctx, store.Key{Name: key}, after, later, 0)
	}
	if _, err := s.Decide(ctx, store.Key{Name: key}, after, later, 1); err != nil {
		t.Fatal(err)
	}
	if boxedNow() {
		t.Fatal("with nothing packed left, a state of the new rate count is still boxed")
	}
}

// A shard's seldom-written fields share no cache line with the fields most
// decisions write, nor with another shard's.
func TestShardLayout(t *testing.T) {
	var sh shard
	if got := unsafe.Sizeof(sh); got != 384 {
		t.Fatalf("a shard is %d bytes, want 384", got)
	}
	if got := unsafe.Offsetof(sh.mu); got != 64 {
		t.Fatalf("mu at offset %d, want 64", got)
	}
	if got := unsafe.Offsetof(sh.readers); got != 128 || unsafe.Sizeof(sh.readers[0]) != 64 {
		t.Fatalf("readers at offset %d, %d bytes each; want 128 and 64", got, unsafe.Sizeof(sh.readers[0]))
	}
	if got := unsafe.Offsetof(Store{}.shards); got != 0 {
		t.Fatalf("shards at offset %d, want 0", got)
	}
}
