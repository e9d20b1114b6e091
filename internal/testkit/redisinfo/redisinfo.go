// Package redisinfo holds what ratewise's measuring commands and benchmarks
// share: the algorithms they measure, reading INFO, filling a sliding log,
// and cleaning up after a run.
package redisinfo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

// Field returns the value of name in an INFO reply, or "?".
func Field(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// Stat is one command's line in INFO commandstats.
type Stat struct {
	Calls, Usec int64
}

// CommandStats returns INFO commandstats by command name ("evalsha",
// "config|resetstat", ...).
func CommandStats(ctx context.Context, c *redis.Client) (map[string]Stat, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := map[string]Stat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s Stat
		if _, err := fmt.Sscanf(rest, "calls=%d,usec=%d", &s.Calls, &s.Usec); err == nil {
			stats[strings.TrimPrefix(name, "cmdstat_")] = s
		}
	}
	return stats, nil
}

// CPU returns the seconds of CPU, user and system, Redis's process has
// used (INFO cpu). Unlike INFO commandstats' usec, which is wall time
// inside each command, it leaves out the time Redis waits for a core on a
// busy machine.
func CPU(ctx context.Context, c *redis.Client) (float64, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
		v, err := strconv.ParseFloat(Field(info, f), 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu: %s: %v", f, err)
		}
		total += v
	}
	return total, nil
}

// Harness reports whether a command is the measuring code's own (INFO,
// CONFIG RESETSTAT, MEMORY USAGE, ...) rather than part of a decision.
func Harness(name string) bool {
	switch name {
	case "info", "config|resetstat", "memory|usage", "object|encoding", "flushall", "scan", "del", "ping":
		return true
	}
	return false
}

// Records are the requests FillLog admits: From to To-1, request i at
// Start + i×Spacing.
type Records struct {
	From, To int64
	Start    time.Time
	Spacing  time.Duration
}

// FillLog admits the requests r of cost 1 on key, and fails if any is
// denied. The store must use client
// time. The requests go one after another: a log decides a request whose
// time is behind the key's latest at that latest time, so requests sent
// concurrently, reaching Redis out of order, would share records.
func FillLog(ctx context.Context, s *storeredis.Store, key string, alg algorithms.Algorithm, r Records) error {
	for i := r.From; i < r.To; i++ {
		res, err := s.Decide(ctx, store.Key{Name: key}, alg, r.Start.Add(time.Duration(i)*r.Spacing), 1)
		if err != nil {
			return err
		}
		if !res.Allowed {
			return fmt.Errorf("record %d denied while filling", i)
		}
	}
	return nil
}

// DeleteKeys deletes every key that starts with prefix, a page of SCAN at
// a time, each page in one UNLINK, so that a run's hundreds of thousands of
// keys go in hundreds of round trips, not one each.
func DeleteKeys(ctx context.Context, c *redis.Client, prefix string) {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			c.Unlink(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// Algorithms returns every algorithm of the registry set to limit per window
// (see algo.Nominal), in the registry's order.
func Algorithms(limit int64, window time.Duration, subWindows int64) []algorithms.Algorithm {
	var algs []algorithms.Algorithm
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, limit, window, subWindows)
		if err != nil {
			panic(fmt.Sprintf("redisinfo: %s at %d per %v: %v", k.String(), limit, window, err)) // callers pass constants
		}
		algs = append(algs, alg)
	}
	return algs
}

// Totals returns the calls and the µs of every command Redis ran since
// CONFIG RESETSTAT but the harness's own (a script's time includes the
// commands it runs, and its inner commands are counted as calls too).
func Totals(ctx context.Context, c *redis.Client) (calls, usec int64, err error) {
	stats, err := CommandStats(ctx, c)
	if err != nil {
		return 0, 0, err
	}
	for name, st := range stats {
		if !Harness(name) {
			calls += st.Calls
			usec += st.Usec
		}
	}
	return calls, usec, nil
}
