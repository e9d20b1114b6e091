package storeredis_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// TestEveryWriteHasATTL checks, for every algorithm in both time modes, that
// the key's TTL is its ResetAfter rounded up to the millisecond, and one
// more (plus storecheck.ExpiryGrace in client-time mode), and that an idle key
// vanishes on its own once that time has passed (miniredis's clock is
// moved, not waited for). With a client that resends, a key whose value
// records its writers lives as long as the records too, and no shorter.
func TestEveryWriteHasATTL(t *testing.T) {
	for _, mode := range []struct {
		name    string
		opts    []storeredis.Option
		grace   time.Duration
		resends bool
	}{
		{"client-time", []storeredis.Option{storeredis.WithClientTime()}, storecheck.ExpiryGrace, false},
		{"server-time", nil, 0, false},
		{"client-time-resends", []storeredis.Option{storeredis.WithClientTime()}, storecheck.ExpiryGrace, true},
		{"server-time-resends", nil, 0, true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			m := miniredis.RunT(t)
			retries := -1
			if mode.resends {
				retries = 0 // go-redis's default, 3
			}
			client := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: retries})
			t.Cleanup(func() { client.Close() })
			s := storeredis.New(client, append(mode.opts, storeredis.WithWarnings(0, nil))...)
			ctx := context.Background()
			now := time.Date(2026, 6, 1, 13, 59, 35, 123456000, time.UTC)
			for _, alg := range allAlgorithms {
				t.Run(alg.Kind().String(), func(t *testing.T) {
					key := testKey(t)
					var res algorithms.Result
					for i := range 3 {
						at := now.Add(time.Duration(i) * time.Second)
						m.SetTime(at) // the server's clock, for server time
						var err error
						if res, err = s.Decide(ctx, store.Key{Name: key}, alg, at, 1); err != nil {
							t.Fatal(err)
						}
					}
					ttl := m.TTL(s.Key(key, alg))
					// Rounded up to the millisecond, and one more (see ttl_ms
					// in prelude.lua).
					want := (res.ResetAfter + time.Millisecond - 1).Truncate(time.Millisecond) +
						time.Millisecond + mode.grace
					if ttl != want && !(mode.resends && ttl > want) {
						t.Fatalf("TTL %v, want %v for ResetAfter %v", ttl, want, res.ResetAfter)
					}
					m.FastForward(ttl)
					if m.Exists(s.Key(key, alg)) {
						t.Fatalf("the key outlived its TTL")
					}
				})
			}
		})
	}
}

// TestSlidingLogMembersUnique: 8 clients each admit 25 requests, all 200 at
// distinct microseconds interleaved between the clients; no record
// overwrites another, and the log counts all 200.
func TestSlidingLogMembersUnique(t *testing.T) {
	addr := redistest.Standalone(t).Addr
	alg := algorithms.SlidingLog{Limit: 1000, Window: time.Minute}
	key := testKey(t)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for c := range 8 {
		s := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
		wg.Go(func() {
			for i := range 25 {
				res, err := s.Decide(
					context.Background(),
					store.Key{Name: key},
					alg,
					now.Add(time.Duration(i*8+c)*time.Microsecond),
					1,
				)
				if err != nil {
					t.Error(err)
					return
				}
				if res.Allowed {
					admitted.Add(1)
				}
			}
		})
	}
	wg.Wait()
	s := storeredis.New(newClient(t, addr), storeredis.WithClientTime())
	records, err := newClient(t, addr).ZCount(context.Background(), s.Key(key, alg), "0", "+inf").Result()
	if err != nil || admitted.Load() != 200 || records > 200 {
		t.Fatalf(
			"%d admitted, %d records (%v); want 200 admitted in at most 200 records",
			admitted.Load(),
			records,
			err,
		)
	}
	res, err := s.Decide(context.Background(), store.Key{Name: key}, alg, now.Add(time.Second), 0)
	if err != nil || res.Remaining != 800 {
		t.Fatalf("Peek: %+v, %v; want Remaining 800", res, err)
	}
}

// TestStateOfOtherVersions: keys an older ratewise wrote, under key names
// without a scope, are never read; a key in the current layout with fields
// missing or values no decision writes decides without an error and within
// range.
func TestStateOfOtherVersions(t *testing.T) {
	for _, target := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"miniredis", func(t *testing.T) string { return miniredis.RunT(t).Addr() }},
		{"redis", func(t *testing.T) string { return redistest.Standalone(t).Addr }},
	} {
		t.Run(target.name, func(t *testing.T) {
			c := newClient(t, target.addr(t))
			s := storeredis.New(c)
			ctx := context.Background()
			now := time.Now()
			tat := fmt.Sprint(now.Add(time.Minute).UnixMicro())
			states := map[string][]any{
				"fixed_window": {"garbage", "1 2 3", "-5 7", fmt.Sprint(now.UnixMicro()) + " 99999"},
				"token_bucket": {
					"6000000 " + fmt.Sprint(now.UnixMicro()),
					tat,
					tat + " 7",
					tat + " 1 2",
					"x",
					"-1 -1 -1 -1",
				},
				"gcra": {
					tat,
					tat + " 3",
					tat + " 3 " + fmt.Sprint(now.Add(time.Hour).UnixMicro()) + " 1",
					"9999999999999999 0 0 5",
					"",
					tat + " 0 99999999999999999999 5",
				},
				"sliding_log": {
					[]redis.Z{{Score: float64(now.UnixMicro()), Member: "abc"}},
					[]redis.Z{{Score: -5, Member: "T"}},
					[]redis.Z{
						{Score: float64(now.UnixMicro()), Member: "7"},
						{Score: float64(now.UnixMicro() + 1), Member: "3"},
					},
				},
				"sliding_window": {
					[]redis.Z{{Score: 1, Member: "x"}, {Score: -1e15, Member: "L"}},
					[]redis.Z{{Score: float64(now.UnixMicro()), Member: "100"}},
					[]redis.Z{{Score: -1e20, Member: "L"}},
				},
				"compact_log": {"garbage", strings.Repeat("\xff", 40),
					ring(2, 5, 1, 0) + strings.Repeat("\x00", 16), // head past the ring
					ring(
						2,
						0,
						2,
						1<<60,
					) + strings.Repeat(
						"\x00",
						16,
					), // a latest time past 2^52
					ring(
						4,
						0,
						4,
						uint64(now.UnixMicro()),
					) + ring(
						uint64(now.UnixMicro()),
					), // ring shorter than its header says
					ring(1, 0, 1, uint64(now.UnixMicro())) + ring(uint64(now.UnixMicro()))[:8]}, // a valid ring of one
			}
			for _, alg := range allAlgorithms {
				key := testKey(t) + ":" + alg.Kind().String()
				// An older version's key for the same user.
				old := "ratewise:" + alg.Kind().String() + ":{" + key + "}"
				if err := c.Set(ctx, old, "1 1", time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				if res, err := s.Decide(ctx, store.Key{Name: key}, alg, now, 0); err != nil ||
					res.Remaining != algo.MaxCost(alg) {
					t.Fatalf("%s beside an older version's key: %+v, %v; want full", alg.Kind().String(), res, err)
				}
				for i, st := range states[alg.Kind().String()] {
					k := fmt.Sprintf("%s:%d", key, i)
					rk := s.Key(k, alg)
					var err error
					if z, ok := st.([]redis.Z); ok {
						err = c.ZAdd(ctx, rk, z...).Err()
					} else {
						err = c.Set(ctx, rk, st, time.Minute).Err()
					}
					if err != nil {
						t.Fatal(err)
					}
					for cost := int64(0); cost <= algo.MaxCost(alg); cost++ {
						res, err := s.Decide(ctx, store.Key{Name: k}, alg, now, cost)
						if err != nil || res.Remaining < 0 || res.Remaining > algo.MaxCost(alg) || res.RetryAfter < 0 ||
							res.ResetAfter < 0 ||
							res.Allowed != (res.RetryAfter == 0) {
							t.Fatalf("%s on the state %v, cost %d: %+v, %v", alg.Kind().String(), st, cost, res, err)
						}
					}
				}
			}
		})
	}
}

// TestExpiredRecordsAreRemovedInBoundedSteps: when thousands of records
// expire at once, one decision removes at most 1,000 of them, so that no
// call holds Redis for long; the rest go with the next calls, and the
// decisions count only what is live throughout.
func TestExpiredRecordsAreRemovedInBoundedSteps(t *testing.T) {
	c := newClient(t, redistest.Standalone(t).Addr)
	s := storeredis.New(c, storeredis.WithClientTime())
	ctx := context.Background()
	alg := algorithms.SlidingLog{Limit: 10_000, Window: time.Minute}
	key := testKey(t)
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	if err := redisinfo.FillLog(
		ctx, s, key, alg, redisinfo.Records{To: 2_500, Start: start, Spacing: time.Microsecond},
	); err != nil {
		t.Fatal(err)
	}
	records := func() int64 {
		n, err := c.ZCount(ctx, s.Key(key, alg), "0", "+inf").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	later := start.Add(2 * time.Minute)
	for i, want := range []int64{1_501, 502, 3} {
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, later.Add(time.Duration(i)*time.Microsecond), 1)
		if err != nil || !res.Allowed || res.Remaining != alg.Limit-int64(i)-1 {
			t.Fatalf(
				"decision %d after the window: %+v, %v; want admitted with Remaining %d",
				i,
				res,
				err,
				alg.Limit-int64(i)-1,
			)
		}
		if got := records(); got != want {
			t.Fatalf("after decision %d: %d records, want %d (at most 1,000 removed per call)", i, got, want)
		}
	}
}

// A log's members are its running total modulo 2^52, so once the total
// wraps, a new record can share its member with an expired record not yet
// removed. The expired records go first, so the new one survives. The key
// is written by hand in the state a wrapped total leaves: the total is 5
// (modulo 2^52), and the one expired record's member is 5.
func TestNewRecordMeetsAnExpiredMember(t *testing.T) {
	ctx := context.Background()
	for name, addr := range map[string]string{
		"redis": redistest.Standalone(t).Addr, "miniredis": miniredis.RunT(t).Addr(),
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, addr)
			s := storeredis.New(c, storeredis.WithClientTime())
			alg := algorithms.SlidingLog{Limit: 1, Window: time.Second}
			start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
			key := testKey(t)
			old := float64(start.UnixMicro())
			if err := c.ZAdd(ctx, s.Key(key, alg),
				redis.Z{Score: -1 - 5, Member: "T"}, redis.Z{Score: -1 - old, Member: "L"},
				redis.Z{Score: old, Member: "5"}).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Del(ctx, s.Key(key, alg)) })
			if res, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(2*time.Second), 1); err != nil ||
				!res.Allowed {
				t.Fatalf("after the record expired: %+v, %v; want admitted", res, err)
			}
			res, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(2500*time.Millisecond), 1)
			if err != nil || res.Allowed || res.RetryAfter != 500*time.Millisecond {
				t.Fatalf("500ms later: %+v, %v; want denied for 500ms", res, err)
			}
		})
	}
}

// ring returns big-endian 8-byte integers: a compact log's header, or slots.
func ring(v ...uint64) string {
	b := make([]byte, 0, 8*len(v))
	for _, x := range v {
		b = binary.BigEndian.AppendUint64(b, x)
	}
	return string(b)
}
