package scripts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/redistest"
)

// BenchmarkBatchScript runs each kind's batch script (decide_batch.lua) on
// its own redis-server, one call of 12 decisions of cost 1 per iteration,
// 1,000 per minute per key, at Redis's TIME, from one client: on a new key
// for each decision (keys=new: every decision an admission that creates
// its key), on 5,000 keys in turn (keys=5000: admissions that rewrite a
// state), or on one key (keys=1: nearly every decision a denial). It
// reports redis-µs/decision, the EVALSHA usec in INFO commandstats over
// the decisions, which is Redis's own time for the script and the commands
// it calls, without the load a test driving many callers puts on the same
// machine. On a shared machine, compare figures of one run only.
//
//	go test ./storeredis/internal/scripts -run XXX -bench BatchScript
func BenchmarkBatchScript(b *testing.B) {
	redistest.Require(b)
	srv, err := redistest.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { c.Close() })
	const batch = 12
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, 1000, time.Minute, 6)
		if err != nil {
			b.Fatal(err)
		}
		p := algo.ParamsOf(alg)
		params := []any{p.Limit, p.Window.Microseconds()}
		if algo.TakesBurst(k) {
			params = append(params, p.Burst)
		}
		if algo.TakesSubWindows(k) {
			params = append(params, p.SubWindows)
		}
		sc, err := Batch(k)
		if err != nil {
			b.Fatal(err)
		}
		for _, keys := range []struct {
			name string
			of   func(n int) string
		}{
			{"new", func(n int) string { return fmt.Sprint(n) }},
			{"5000", func(n int) string { return fmt.Sprint(n % 5000) }},
			{"1", func(int) string { return "hot" }},
		} {
			b.Run("alg="+k.Name()+"/keys="+keys.name, func(b *testing.B) {
				if err := c.FlushAll(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				if err := c.ConfigResetStat(ctx).Err(); err != nil {
					b.Fatal(err)
				}
				n := 0
				rkeys := make([]string, batch)
				args := append([]any{"", 0, 1, len(params)}, params...)
				for range batch {
					args = append(args, 1, 1, 0) // the first set, cost 1, no once key
				}
				for b.Loop() {
					for i := range rkeys {
						rkeys[i] = "ratewise:" + k.Name() + ":bench:{user:" + keys.of(n) + "}"
						n++
					}
					if err := sc.Run(ctx, c, rkeys, args...).Err(); err != nil {
						b.Fatal(err)
					}
				}
				// Not internal/redisinfo: it imports storeredis, which
				// imports this package.
				info, err := c.Info(ctx, "commandstats").Result()
				if err != nil {
					b.Fatal(err)
				}
				var usec, calls int64
				for _, line := range strings.Split(info, "\n") {
					var u, n int64
					if _, err := fmt.Sscanf(strings.TrimSpace(line), "cmdstat_evalsha:calls=%d,usec=%d", &n, &u); err == nil {
						usec, calls = usec+u, calls+n
					}
					if _, err := fmt.Sscanf(strings.TrimSpace(line), "cmdstat_eval:calls=%d,usec=%d", &n, &u); err == nil {
						usec, calls = usec+u, calls+n
					}
				}
				b.ReportMetric(float64(usec)/float64(calls*batch), "redis-µs/decision")
			})
		}
	}
}
