package storeredis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestSlotMigration: while a resharding migrates a key's slot, a peek,
// which names the key alone, follows the slot; a charging decision, which
// on a ClusterClient carries the store's request ID and so names a second
// key of the slot (its once key, which does not exist yet), is refused with
// TRYAGAIN until the slot is stable again: store.ErrUnavailable, never a
// decision made on half the keys; then it is decided. A coalescing store's
// charging decision, recorded in the state's own value, follows the slot.
func TestSlotMigration(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	cc := redis.NewClusterClient(
		&redis.ClusterOptions{
			Addrs:           cl.Addrs(),
			MaxRedirects:    1,
			MinRetryBackoff: time.Millisecond,
			MaxRetryBackoff: 2 * time.Millisecond,
		},
	)
	t.Cleanup(func() { cc.Close() })
	s := storeredis.New(cc, storeredis.WithCoalescing(0), storeredis.WithDenyCache(0))
	alg := algorithms.FixedWindow{Limit: 10, Window: time.Minute}
	key := testKey(t) + ":" + ratewise.NewRequestID() // one per run, with -count too
	if _, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1); err != nil {
		t.Fatal(err)
	}

	// Mark the slot migrating from its master to another, as
	// redis-cli --cluster reshard does before it moves keys, and stable
	// again afterwards.
	rkey := s.Key(key, alg)
	slot, err := cc.ClusterKeySlot(ctx, rkey).Result()
	if err != nil {
		t.Fatal(err)
	}
	src, err := cc.MasterForKey(ctx, rkey)
	if err != nil {
		t.Fatal(err)
	}
	var dst *redis.Client
	var srcID, dstID string
	for _, addr := range cl.Addrs() {
		c := newClient(t, addr)
		id, err := c.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if addr == src.Options().Addr {
			srcID = id
		} else if dst == nil {
			dst, dstID = c, id
		}
	}
	for _, step := range []struct {
		c    *redis.Client
		args []any
	}{
		{dst, []any{"CLUSTER", "SETSLOT", slot, "IMPORTING", srcID}},
		{src, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", dstID}},
	} {
		if err := step.c.Do(ctx, step.args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	stable := func() {
		for _, c := range []*redis.Client{src, dst} {
			if err := c.Do(ctx, "CLUSTER", "SETSLOT", slot, "STABLE").Err(); err != nil {
				t.Error(err)
			}
		}
	}
	defer stable()

	res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 0)
	if err != nil || !res.Allowed || res.Remaining != 9 {
		t.Fatalf("a peek during the migration: %+v, %v; want the key as it is", res, err)
	}
	_, err = s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "TRYAGAIN") {
		t.Fatalf("a charging decision during the migration: %v; want ErrUnavailable with TRYAGAIN", err)
	}
	t.Logf("a charging decision while the slot migrates: %v", err)
	// A store that coalesces (the default) records the decision in the
	// state's value: it names the key alone and follows the slot.
	coalesced := storeredis.New(cc, storeredis.WithDenyCache(0))
	res, err = coalesced.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
	if err != nil || !res.Allowed || res.Remaining != 8 {
		t.Fatalf("a recorded decision during the migration: %+v, %v; want the second admission", res, err)
	}

	stable()
	res, err = s.Decide(ctx, store.Key{Name: key}, alg, time.Time{}, 1)
	if err != nil || !res.Allowed || res.Remaining != 7 {
		t.Fatalf("the decision once the slot is stable: %+v, %v; want the third admission", res, err)
	}
}
