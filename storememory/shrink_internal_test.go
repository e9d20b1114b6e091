package storememory

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// After a wave of keys has expired and been swept, a table that holds a
// quarter or less of what it held is a new, smaller map: Go maps never
// shrink, so keeping the old one would keep the wave's memory.
func TestSweepShrinksEmptiedTables(t *testing.T) {
	ctx := context.Background()
	s := New()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	for i := range shardCount * 2 * minShrink {
		if _, err := s.Decide(ctx, fmt.Sprint("wave:", i), alg, t0, 1); err != nil {
			t.Fatal(err)
		}
	}
	before := map[*shard]uintptr{}
	for i := range s.shards {
		sh := &s.shards[i]
		if len(sh.tables) == 1 && len(sh.tables[0].entries) >= minShrink {
			before[sh] = reflect.ValueOf(sh.tables[0].entries).Pointer()
		}
	}
	if len(before) < shardCount/2 {
		t.Fatalf("only %d of %d shards hold %d entries", len(before), shardCount, minShrink)
	}
	// Three times as many decisions, an hour later, on 16 keys a shard:
	// every shard sweeps the expired wave.
	for i := range 3 * shardCount * 2 * minShrink {
		if _, err := s.Decide(ctx, fmt.Sprint("live:", i%(16*shardCount)), alg, t0.Add(time.Hour), 1); err != nil {
			t.Fatal(err)
		}
	}
	for sh, old := range before {
		if n := len(sh.tables[0].entries); n > 64 {
			t.Fatalf("a shard still holds %d entries after the wave expired", n)
		}
		if reflect.ValueOf(sh.tables[0].entries).Pointer() == old {
			t.Fatal("a shard emptied by a sweep kept its large map")
		}
	}
}
