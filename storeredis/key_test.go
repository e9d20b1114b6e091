package storeredis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

func TestKeyLayout(t *testing.T) {
	s := storeredis.New(nil)
	for _, tt := range []struct {
		alg  algorithms.Algorithm
		want string
	}{
		{algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 5}, "ratewise:gcra:v3:1s:{user:1001}"},
		{algorithms.TokenBucket{Capacity: 5, Refill: algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}},
			"ratewise:token_bucket:v3:1500ms:{user:1001}"},
		{algorithms.FixedWindow{Limit: 100, Window: 24 * time.Hour}, "ratewise:fixed_window:v3:24h:{user:1001}"},
		{algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6},
			"ratewise:sliding_window:1m/6:{user:1001}"},
	} {
		if got := s.Key("user:1001", tt.alg); got != tt.want {
			t.Errorf("Key = %q, want %q", got, tt.want)
		}
	}
	s = storeredis.New(nil, storeredis.WithKeyPrefix("rl:"))
	if got, want := s.Key("a{b}%c", algorithms.SlidingLog{Limit: 1, Window: time.Minute}),
		"rl:sliding_log:1m:{a%7Bb%7D%25c}"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
	// A hash tag in the prefix would put every key in one Cluster slot:
	// its braces are escaped, so each key's own tag decides its slot.
	s = storeredis.New(nil, storeredis.WithKeyPrefix("{rl}:"))
	alg := algorithms.SlidingLog{Limit: 1, Window: time.Minute}
	if got, want := s.Key("alice", alg), "%7Brl%7D:sliding_log:1m:{alice}"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

// adversarialKeys are distinct user keys that naive layouts confuse.
var adversarialKeys = []string{
	"a", "a:b", "a}", "{a}", "}{", "{", "}", "a{b}c", "a%7Bb", "a{b", "%", "%25", "%7B", "%7D",
	"a b", " ", "a:{b}", "gcra:{a}", "\x00", "\xff\xfe", "é", "e\u0301", strings.Repeat("x", 10_000),
	strings.Repeat("{", 100), "a\nb", "*", "?",
}

func TestKeysNeverCollide(t *testing.T) {
	s := storeredis.New(nil)
	seen := map[string]string{}
	for _, alg := range allAlgorithms {
		for _, k := range adversarialKeys {
			rk := s.Key(k, alg)
			if prev, dup := seen[rk]; dup {
				t.Fatalf("keys %q and %q (with %s) both map to %q", prev, k, alg.Kind().String(), rk)
			}
			seen[rk] = k
			// Exactly one hash tag: the escaped key contains no brace.
			if strings.Count(rk, "{") != 1 || strings.Count(rk, "}") != 1 {
				t.Fatalf("key %q maps to %q, which has more than one brace pair", k, rk)
			}
		}
	}
}

// TestAdversarialKeysOnCluster decides on every adversarial key on a real
// 3-master cluster (no CROSSSLOT or MOVED reaches the caller), checks that
// the state landed in the slot of the key's hash tag, and that keys stay
// independent.
func TestAdversarialKeysOnCluster(t *testing.T) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.SharedCluster(t).Addrs()})
	t.Cleanup(func() { c.Close() })
	s := storeredis.New(c)
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerMinute(1), Burst: 1}
	for i, k := range adversarialKeys {
		key := testKey(t) + ":" + k
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, time.Now(), 1)
		if err != nil {
			t.Fatalf("key %d %q: %v", i, k, err)
		}
		if !res.Allowed {
			t.Fatalf("key %d %q: the first request was denied, so it shares state with another key", i, k)
		}
		rk := s.Key(key, alg)
		tag := rk[strings.Index(rk, "{")+1 : strings.LastIndex(rk, "}")]
		slot, err := c.ClusterKeySlot(ctx, rk).Result()
		if err != nil {
			t.Fatal(err)
		}
		tagSlot, _ := c.ClusterKeySlot(ctx, tag).Result()
		if slot != tagSlot {
			t.Fatalf("key %q: slot %d, but its tag's slot is %d", k, slot, tagSlot)
		}
		if n, err := c.Exists(ctx, rk).Result(); err != nil || n != 1 {
			t.Fatalf("key %q: state not found at %q (%v)", k, rk, err)
		}
	}
}
