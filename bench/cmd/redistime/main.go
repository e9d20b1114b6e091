// Command redistime measures Redis's own time per ratewise decision, per
// algorithm, on the batch (coalescing) path, and prints a markdown table.
// Redis runs scripts on one thread, so this time bounds the decisions per
// second one Redis node can make.
//
// For each algorithm it drives 64 callers for a while through a store with
// the default coalescing and no deny cache, in server time, first over
// 100,000 keys (nearly every decision an admission that writes), then on
// one hot key (nearly every decision a denial); Redis time per decision is
// the usec of every command in INFO commandstats (the harness's own
// excepted) over the decisions made, as bench/peers computes it.
//
// It starts its own redis-server on a free loopback port, unless -redis names
// one; it then only writes keys under its own prefix and deletes them.
//
//	go run ./bench/cmd/redistime [-d 2s] [-rounds 1]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redissession"
	"github.com/ratewise/ratewise/storeredis"
)

const (
	callers   = 64
	manyKeys  = 100_000
	perMinute = 1000
)

func main() {
	addr := flag.String("redis", "", "address of a Redis to measure on (default: start a throwaway redis-server)")
	d := flag.Duration("d", 2*time.Second, "how long each algorithm is driven on each key set")
	flag.Parse()
	if err := run(*addr, *d); err != nil {
		fmt.Fprintln(os.Stderr, "redistime:", err)
		os.Exit(2)
	}
}

func run(addr string, d time.Duration) error {
	session, err := redissession.Open(addr, "redistime", 2*callers)
	if err != nil {
		return err
	}
	defer session.Close()
	ctx := context.Background()
	c := session.Client
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	fmt.Printf(
		"Redis %s, %d callers, %v per cell, %d per minute per key, measured by `go run ./bench/cmd/redistime`.\n\n",
		redisinfo.Field(info, "redis_version"),
		callers,
		d,
		perMinute,
	)
	fmt.Println(
		"| algorithm | Redis µs/decision, 100,000 keys | Redis µs/decision, hot key | decisions per script call, " +
			"100,000 keys |",
	)
	fmt.Println("| --- | --- | --- | --- |")
	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("user:", i)
	}
	s := storeredis.New(
		c,
		storeredis.WithKeyPrefix(session.Prefix),
		storeredis.WithDenyCache(0),
		storeredis.WithWarnings(0, nil),
	)
	for _, alg := range redisinfo.Algorithms(perMinute, time.Minute, 6) {
		l, err := ratewise.New(s, alg)
		if err != nil {
			return err
		}
		decide := func(key string) (bool, error) {
			res, err := l.Allow(ctx, key)
			return res.Allowed, err
		}
		measure := func(keys []string) (micros, perCall float64, err error) {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				return 0, 0, err
			}
			r := loadgen.Drive(callers, keys, d, decide)
			if r.Errors > 0 {
				return 0, 0, fmt.Errorf("%s: %d errors", alg.Kind().String(), r.Errors)
			}
			stats, err := redisinfo.CommandStats(ctx, c)
			if err != nil {
				return 0, 0, err
			}
			var usec, scripts int64
			for name, st := range stats {
				if !redisinfo.Harness(name) {
					usec += st.Usec
				}
				if name == "evalsha" || name == "eval" {
					scripts += st.Calls
				}
			}
			return float64(usec) / float64(r.Decisions), float64(r.Decisions) / float64(max(scripts, 1)), nil
		}
		many, perCall, err := measure(keys)
		if err != nil {
			return err
		}
		redisinfo.DeleteKeys(ctx, c, session.Prefix)
		hot, _, err := measure(keys[:1])
		if err != nil {
			return err
		}
		redisinfo.DeleteKeys(ctx, c, session.Prefix)
		fmt.Printf("| %s | %.2f | %.2f | %.1f |\n", alg.Kind().String(), many, hot, perCall)
	}
	return nil
}
