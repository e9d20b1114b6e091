// Command rediscost measures what one ratewise decision costs on Redis, per
// algorithm, and prints markdown tables:
//
//   - round trips per decision (counted by a go-redis hook) and the Redis
//     commands each decision runs inside its script (INFO commandstats);
//   - Redis memory per key (MEMORY USAGE ... SAMPLES 0), and for the sliding
//     log, memory per record for N = 100, 10,000 and 100,000 records.
//
// It starts its own redis-server on a free loopback port, unless -redis names
// one; it then only writes keys under its own prefix and deletes them.
//
//	go run ./bench/cmd/rediscost
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redissession"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

func main() {
	addr := flag.String("redis", "", "address of a Redis to measure on (default: start a throwaway redis-server)")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "rediscost:", err)
		os.Exit(2)
	}
}

func run(addr string) error {
	session, err := redissession.Open(addr, "rediscost", 32)
	if err != nil {
		return err
	}
	defer session.Close()
	ctx := context.Background()
	c, roundTrips, prefix := session.Client, session.RoundTrips, session.Prefix
	s := storeredis.New(
		c,
		storeredis.WithClientTime(),
		storeredis.WithKeyPrefix(prefix),
		storeredis.WithWarnings(0, nil),
	)

	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	fmt.Printf("Redis %s, measured by `go run ./bench/cmd/rediscost`.\n\n", redisinfo.Field(info, "redis_version"))

	fmt.Println("## Commands per decision")
	fmt.Println()
	fmt.Println(
		"Redis time is the script's own time inside Redis per decision (INFO commandstats, EVALSHA usec per call), " +
			"the median of 15 rounds of 200 decisions each.",
	)
	fmt.Println()
	fmt.Println(
		"| algorithm | round trips | commands in the script, admitted | which | Redis µs, admitted | commands, " +
			"denied | which | Redis µs, denied |",
	)
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, alg := range algs {
		row, err := commandsPerDecision(ctx, c, s, alg, roundTrips)
		if err != nil {
			return err
		}
		fmt.Println(row)
	}

	fmt.Println()
	fmt.Println("## Memory per key")
	fmt.Println()
	fmt.Println(
		"Key `user:1001`, stored as `ratewise:<algorithm>:[v<layout>:]<scope>:{user:1001}` (the default prefix, " +
			"the state's layout version for the kinds that have one, then the window or period, such as " +
			"`1m`); state after requests as described.",
	)
	fmt.Println()
	fmt.Println("| algorithm | state | bytes (MEMORY USAGE) | encoding |")
	fmt.Println("| --- | --- | --- | --- |")
	keyStore := storeredis.New(c, storeredis.WithClientTime(), storeredis.WithWarnings(0, nil))
	for _, m := range memoryCases() {
		key := "user:1001"
		_ = keyStore.Reset(ctx, store.Key{Name: key}, m.alg)
		for i, cost := range m.costs {
			if _, err := keyStore.Decide(ctx, store.Key{Name: key}, m.alg, t0.Add(time.Duration(i)*m.every), cost); err != nil {
				return err
			}
		}
		rk := keyStore.Key(key, m.alg)
		bytes, enc, err := usage(ctx, c, rk)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %s | %d | %s |\n", m.alg.Kind().String(), m.state, bytes, enc)
		_ = keyStore.Reset(ctx, store.Key{Name: key}, m.alg)
	}

	fmt.Println()
	fmt.Println("## Sliding log: memory per record")
	fmt.Println()
	fmt.Println(
		"N requests of cost 1 at distinct microseconds, all within the window, against the common estimate of ~100 " +
			"B per sorted-set record.",
	)
	fmt.Println()
	fmt.Println("| records N | bytes (MEMORY USAGE) | bytes per record | encoding | the common estimate |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, n := range []int{100, 10_000, 100_000} {
		alg := algorithms.SlidingLog{Limit: int64(n), Window: time.Hour}
		key := fmt.Sprint("records:", n)
		if err := redisinfo.FillLog(
			ctx, s, key, alg, redisinfo.Records{To: int64(n), Start: t0, Spacing: 7 * time.Microsecond},
		); err != nil {
			return err
		}
		bytes, enc, err := usage(ctx, c, s.Key(key, alg))
		if err != nil {
			return err
		}
		fmt.Printf("| %d | %d | %.1f | %s | ~100 |\n", n, bytes, float64(bytes)/float64(n), enc)
		_ = s.Reset(ctx, store.Key{Name: key}, alg)
	}
	if err := setCosts(ctx, c, s, roundTrips); err != nil {
		return err
	}
	return memberLengths(ctx, c, prefix)
}

// setCosts measures decisions over sets of k limits on one key, all or
// nothing (store.Store.DecideSet): round trips and the script's time in Redis.
func setCosts(ctx context.Context, c *redis.Client, s *storeredis.Store, roundTrips *redistest.RoundTrips) error {
	fmt.Println()
	fmt.Println("## Sets of limits")
	fmt.Println()
	fmt.Println(
		"A decision over the first k algorithms above at 1,000 per minute, all on one key, all or nothing: 200 " +
			"decisions 1ms apart, all admitted; Redis time is the median of 15 rounds.",
	)
	fmt.Println()
	fmt.Println("| limits k | round trips per decision | Redis µs per decision |")
	fmt.Println("| --- | --- | --- |")
	for _, k := range []int{1, 2, 4} {
		set := algs[:k]
		var usec []float64
		var trips float64
		for r := range 15 {
			key := fmt.Sprintf("set:%d:%d", k, r)
			if _, err := s.DecideSet(ctx, store.Key{Name: key + ":warm"}, set, t0, 1); err != nil { // load the script
				return err
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				return err
			}
			roundTrips.Reset()
			const n = 200
			for i := range n {
				res, err := s.DecideSet(ctx, store.Key{Name: key}, set, t0.Add(time.Duration(i)*time.Millisecond), 1)
				if err != nil {
					return err
				}
				if !res[0].Allowed {
					return fmt.Errorf("set of %d: decision %d denied", k, i)
				}
			}
			trips = float64(roundTrips.Load()) / n
			stats, err := redisinfo.CommandStats(ctx, c)
			if err != nil {
				return err
			}
			usec = append(usec, float64(stats["evalsha"].Usec)/float64(stats["evalsha"].Calls))
			for _, alg := range set {
				_ = s.Reset(ctx, store.Key{Name: key}, alg)
				_ = s.Reset(ctx, store.Key{Name: key + ":warm"}, alg)
			}
		}
		sort.Float64s(usec)
		fmt.Printf("| %d | %.2f | %.1f |\n", k, trips, usec[len(usec)/2])
	}
	return nil
}

// memberLengths measures what a sorted-set member's length costs, apart from
// ratewise: N members of a fixed length added with ZADD, for the member
// formats a sliding log could use.
func memberLengths(ctx context.Context, c *redis.Client, prefix string) error {
	fmt.Println()
	fmt.Println("## Sorted sets: bytes per record by member length")
	fmt.Println()
	fmt.Println(
		"Plain ZADD of N distinct members of one length (binary), scores as ratewise writes them (microseconds " +
			"since the Unix epoch), to show what the member costs: ratewise's members are the running total " +
			"of admitted cost in decimal, 1 to 6 bytes for the first million units, a binary ULID is 16 " +
			"bytes, a text ULID 26.",
	)
	fmt.Println()
	lengths := []int{4, 6, 10, 16, 26}
	fmt.Print("| records N |")
	for _, l := range lengths {
		fmt.Printf(" %d-byte members |", l)
	}
	fmt.Println()
	fmt.Println("| --- |" + strings.Repeat(" --- |", len(lengths)))
	for _, n := range []int{10_000, 100_000} {
		fmt.Printf("| %d |", n)
		for _, l := range lengths {
			key := fmt.Sprintf("%smembers:%d:%d", prefix, n, l)
			for start := 0; start < n; start += 5000 {
				pipe := c.Pipeline()
				for i := start; i < min(start+5000, n); i++ {
					// i in big-endian binary, padded to l bytes: unique for
					// any l >= 4.
					member := make([]byte, l)
					binary.BigEndian.PutUint32(member[l-4:], uint32(i))
					pipe.ZAdd(ctx, key, redis.Z{Score: float64(1780000000000123 + i), Member: member})
				}
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
			card, err := c.ZCard(ctx, key).Result()
			if err != nil {
				return err
			}
			bytes, err := c.MemoryUsage(ctx, key, 0).Result()
			if err != nil {
				return err
			}
			fmt.Printf(" %.1f |", float64(bytes)/float64(card))
			c.Del(ctx, key)
		}
		fmt.Println()
	}
	return nil
}

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

var algs = redisinfo.Algorithms(1000, time.Minute, 6)

type memoryCase struct {
	alg   algorithms.Algorithm
	state string
	costs []int64
	every time.Duration
}

// memoryCases are typical states of every algorithm, by family: a window
// with a few requests, a log of one record or of sub-windows in use, a
// bucket whose TAT is a whole µs and one with a remainder.
func memoryCases() []memoryCase {
	var cs []memoryCase
	for _, k := range algorithms.Kinds() {
		add := func(p algorithms.Params, state string, costs []int64, every time.Duration) {
			alg, err := k.New(p)
			if err != nil {
				panic(err) // constants below
			}
			cs = append(cs, memoryCase{alg, state, costs, every})
		}
		switch {
		case algo.FamilyOf(k) == algo.FamilyFixedWindow:
			add(
				algorithms.Params{Limit: 100, Window: time.Minute},
				"3 requests in the window",
				[]int64{1, 1, 1},
				time.Second,
			)
		case algo.TakesSubWindows(k):
			add(
				algorithms.Params{Limit: 100, Window: time.Minute, SubWindows: 6},
				"6 sub-windows in use",
				repeat(1, 6),
				10*time.Second,
			)
			add(
				algorithms.Params{Limit: 100, Window: time.Minute, SubWindows: 60},
				"60 sub-windows in use",
				repeat(1, 60),
				time.Second,
			)
		case algo.FamilyOf(k) == algo.FamilyLog:
			add(algorithms.Params{Limit: 100, Window: time.Minute}, "1 record", []int64{1}, time.Second)
		case algo.TakesBurst(k):
			add(
				algorithms.Params{Limit: 10, Window: time.Second, Burst: 100},
				"3 taken at 10/s (a whole µs)",
				[]int64{1, 1, 1},
				time.Millisecond,
			)
			add(
				algorithms.Params{Limit: 3, Window: time.Second, Burst: 100},
				"1 taken at 3/s (with a remainder)",
				[]int64{1},
				time.Millisecond,
			)
		default:
			add(algorithms.Params{Limit: 100, Window: time.Minute}, "3 requests", []int64{1, 1, 1}, time.Second)
		}
	}
	return cs
}

func repeat(v int64, n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// commandsPerDecision measures admitted and denied decisions on one key:
// the commands they run, from the first round, and the script's time inside
// Redis, the median over rounds.
func commandsPerDecision(
	ctx context.Context,
	c *redis.Client,
	s *storeredis.Store,
	alg algorithms.Algorithm,
	roundTrips *redistest.RoundTrips,
) (string, error) {
	key := "commands:" + alg.Kind().String()
	const n, rounds = 200, 15
	// Warm the script cache so NOSCRIPT does not count.
	if _, err := s.Decide(ctx, store.Key{Name: "warm"}, alg, t0, 1); err != nil {
		return "", err
	}
	type measured struct {
		trips, commands, usec float64
		which                 string
	}
	measure := func(start time.Time, step time.Duration) (measured, error) {
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			return measured{}, err
		}
		roundTrips.Reset()
		for i := range n {
			if _, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(time.Duration(i)*step), 1); err != nil {
				return measured{}, err
			}
		}
		m := measured{trips: float64(roundTrips.Load()) / n}
		stats, err := redisinfo.CommandStats(ctx, c)
		if err != nil {
			return measured{}, err
		}
		var total int64
		var names []string
		for name, st := range stats {
			if name == "evalsha" {
				m.usec = float64(st.Usec) / float64(st.Calls)
			}
			if name == "evalsha" || name == "eval" || redisinfo.Harness(name) {
				continue
			}
			total += st.Calls
			names = append(names, fmt.Sprintf("%s %.2g", strings.ToUpper(name), float64(st.Calls)/n))
		}
		sort.Strings(names)
		m.commands, m.which = float64(total)/n, strings.Join(names, ", ")
		return m, nil
	}
	var admitted, denied []measured
	for r := range rounds {
		_ = s.Reset(ctx, store.Key{Name: key}, alg)
		// 1000 per minute: 200 requests 1ms apart are all admitted; 200 more
		// at one instant after the rest of the limit is used up are all
		// denied. Each round starts an hour after the last.
		start := t0.Add(time.Duration(r) * time.Hour)
		a, err := measure(start, time.Millisecond)
		if err != nil {
			return "", err
		}
		left, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(time.Second), 0)
		if err != nil {
			return "", err
		}
		if _, err := s.Decide(ctx, store.Key{Name: key}, alg, start.Add(time.Second), left.Remaining); err != nil {
			return "", err
		}
		d, err := measure(start.Add(time.Second), 0)
		if err != nil {
			return "", err
		}
		admitted, denied = append(admitted, a), append(denied, d)
	}
	_ = s.Reset(ctx, store.Key{Name: key}, alg)
	_ = s.Reset(ctx, store.Key{Name: "warm"}, alg)
	median := func(ms []measured) float64 {
		v := make([]float64, len(ms))
		for i, m := range ms {
			v[i] = m.usec
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	a, d := admitted[0], denied[0]
	return fmt.Sprintf(
		"| %s | %.2f | %.2f | %s | %.1f | %.2f | %s | %.1f |",
		alg.Kind().String(),
		a.trips,
		a.commands,
		a.which,
		median(admitted),
		d.commands,
		d.which,
		median(denied),
	), nil
}

func usage(ctx context.Context, c *redis.Client, key string) (int64, string, error) {
	bytes, err := c.MemoryUsage(ctx, key, 0).Result()
	if err != nil {
		return 0, "", fmt.Errorf("MEMORY USAGE %s: %w", key, err)
	}
	enc, err := c.ObjectEncoding(ctx, key).Result()
	return bytes, enc, err
}
