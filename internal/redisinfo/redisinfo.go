// Package redisinfo holds what ratewise's measuring commands and benchmarks
// share: reading INFO, filling a sliding log, and cleaning up after a run.
package redisinfo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
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

// Harness reports whether a command is the measuring code's own (INFO,
// CONFIG RESETSTAT, MEMORY USAGE, ...) rather than part of a decision.
func Harness(name string) bool {
	switch name {
	case "info", "config|resetstat", "memory|usage", "object|encoding", "flushall", "scan", "del", "ping":
		return true
	}
	return false
}

// FillLog admits requests from..to-1 of cost 1 on key, request i at
// start + i×spacing, from 32 goroutines, and fails if any is denied. The
// store must use client time.
func FillLog(ctx context.Context, s *storeredis.Store, key string, alg algorithms.Algorithm, from, to int64, start time.Time, spacing time.Duration) error {
	var next atomic.Int64
	next.Store(from)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= to {
					return
				}
				res, err := s.Decide(ctx, key, alg, start.Add(time.Duration(i)*spacing), 1)
				if err == nil && !res.Allowed {
					err = fmt.Errorf("record %d denied while filling", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// DeleteKeys deletes every key that starts with prefix.
func DeleteKeys(ctx context.Context, c *redis.Client, prefix string) {
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
}
