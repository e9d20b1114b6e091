package main

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/loadgen"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// runRetries measures what retry safety costs Redis (-retries): GCRA on
// 100,000 keys at full speed from 16 goroutines for d, under two quotas (or
// those -only names), a low one (10 per hour: a burst of 10, then mostly
// denials) and one that admits everything at this speed (1,000 per minute),
// for ratewise with go-redis's default client
// (MaxRetries 3, which makes the store apply each write once), with
// coalescing on (the default), with it and a 500 ms deadline on each
// decision (httplimit's default budget), and off, and with retries off, against
// redis_rate on the same server. Each row starts from an empty Redis and
// reports the keys Redis holds, used_memory per limited key, and the
// commands and bytes per admission.
//
// With maxmemory above 0, Redis runs with that maxmemory and allkeys-lru, and
// each row also reports the admissions beyond what the quota allows over d
// on 100,000 keys (its burst, and its rate over d, per key): what evicting
// states costs exactness.
func runRetries(d time.Duration, maxmemory int64) error {
	srv, err := redistest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	if maxmemory > 0 {
		if err := admin.ConfigSet(ctx, "maxmemory", fmt.Sprint(maxmemory)).Err(); err != nil {
			return err
		}
		if err := admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			return err
		}
		fmt.Printf("maxmemory %d bytes, allkeys-lru.\n\n", maxmemory)
	}
	info, _ := admin.Info(ctx, "server").Result()
	fmt.Printf("Redis %s, %d cores, 16 callers on 100,000 keys for %v per row, GCRA; "+
		"`cd bench/peers && go run . -retries %v`\n\n",
		redisinfo.Field(info, "redis_version"), runtime.NumCPU(), d, d)

	keys := make([]string, manyKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("user:", i)
	}
	type setting struct {
		name     string
		retries  int // the client's MaxRetries: 0 is go-redis's default, 3
		opts     []storeredis.Option
		rate     bool          // redis_rate instead of ratewise
		deadline time.Duration // each decision's context's, if not 0
	}
	settings := []setting{
		{name: "ratewise, default client (MaxRetries 3), coalescing on"},
		{name: "ratewise, default client (MaxRetries 3), coalescing on, 500ms deadline", deadline: 500 * time.Millisecond},
		{name: "ratewise, default client (MaxRetries 3), coalescing off", opts: []storeredis.Option{
			storeredis.WithCoalescing(0),
		}},
		{name: "ratewise, MaxRetries -1", retries: -1},
		{name: "redis_rate, default client", rate: true},
	}
	type quota struct {
		name  string
		limit algorithms.GCRA
		rr    redis_rate.Limit
	}
	quotas := []quota{
		{"10 per hour, burst 10", algorithms.GCRA{Rate: algorithms.PerHour(10), Burst: 10},
			redis_rate.Limit{Rate: 10, Period: time.Hour, Burst: 10}},
		{"1,000 per minute, burst 1,000", algorithms.GCRA{Rate: algorithms.PerMinute(1000), Burst: 1000},
			redis_rate.Limit{Rate: 1000, Period: time.Minute, Burst: 1000}},
	}
	if only != "" {
		quotas = slices.DeleteFunc(quotas, func(q quota) bool { return !strings.Contains(q.name, only) })
	}
	for _, q := range quotas {
		fmt.Printf("Quota: %s.\n\n", q.name)
		fmt.Println("| client | decisions/s | admitted | keys in Redis | used_memory | " +
			"B per limited key | ÷ redis_rate | commands per admission | commands per decision | beyond the quota |")
		fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
		// What the quota allows each key over d: its burst and its rate.
		allowance := manyKeys * (q.limit.Burst + int64(d)*q.limit.Rate.Count/int64(q.limit.Rate.Period))
		type row struct {
			s                        setting
			perSec, admitted         float64
			keys                     int64
			used, perKey             float64
			perAdmission, perDecided float64
			beyond                   int64
		}
		var rows []row
		var ratePerKey float64
		for _, st := range settings {
			if err := admin.FlushAll(ctx).Err(); err != nil {
				return err
			}
			admin.ConfigResetStat(ctx)
			base, err := usedMemory(ctx, admin)
			if err != nil {
				return err
			}
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 32, MaxRetries: st.retries})
			var allow func(ctx context.Context, key string) (bool, error)
			if st.rate {
				rr := redis_rate.NewLimiter(client)
				allow = func(ctx context.Context, key string) (bool, error) {
					res, err := rr.Allow(ctx, key, q.rr)
					return err == nil && res.Allowed > 0, err
				}
			} else {
				opts := append([]storeredis.Option{storeredis.WithWarnings(0, nil)}, st.opts...)
				l, err := ratewise.New(storeredis.New(client, opts...), q.limit)
				if err != nil {
					return err
				}
				allow = allowOf(l)
			}
			decide := func(key string) (bool, error) { return allow(ctx, key) }
			if st.deadline > 0 {
				decide = func(key string) (bool, error) {
					ctx, cancel := context.WithTimeout(ctx, st.deadline)
					defer cancel()
					return allow(ctx, key)
				}
			}
			run := loadgen.Drive(16, keys, d, decide)
			client.Close()
			if run.Errors > 0 {
				return fmt.Errorf("%s: %d errors", st.name, run.Errors)
			}
			used, err := usedMemory(ctx, admin)
			if err != nil {
				return err
			}
			n, _ := admin.DBSize(ctx).Result()
			calls, _ := commands(ctx, admin)
			admitted := run.Decisions - run.Denied
			r := row{
				s:            st,
				perSec:       float64(run.Decisions) / d.Seconds(),
				admitted:     float64(admitted) / float64(max(run.Decisions, 1)),
				keys:         n,
				used:         used - base,
				perKey:       (used - base) / manyKeys,
				perAdmission: float64(calls) / float64(max(admitted, 1)),
				perDecided:   float64(calls) / float64(max(run.Decisions, 1)),
				beyond:       max(admitted-allowance, 0),
			}
			if st.rate {
				ratePerKey = r.perKey
			}
			rows = append(rows, r)
		}
		for _, r := range rows {
			fmt.Printf("| %s | %.0f | %.1f%% | %d | %.1f MB | %.0f | %s | %.2f | %.2f | %d |\n",
				r.s.name, r.perSec, 100*r.admitted, r.keys, r.used/1e6, r.perKey,
				ratio(r.perKey, ratePerKey), r.perAdmission, r.perDecided, r.beyond)
		}
		fmt.Println()
	}
	fmt.Println("Commands are every command Redis ran (INFO commandstats), scripts' inner commands included.")
	return nil
}

// usedMemory is INFO memory's used_memory, in bytes.
func usedMemory(ctx context.Context, c *redis.Client) (float64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(redisinfo.Field(info, "used_memory")), 64)
	if err != nil {
		return 0, fmt.Errorf("used_memory: %w", err)
	}
	return v, nil
}
