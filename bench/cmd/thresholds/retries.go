package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/storeredis"
)

// retryTable measures what an admission costs Redis with go-redis's
// default client, which resends (MaxRetries 3), so that the store applies
// each write once: the commands Redis runs per admission (scripts' inner
// commands included), the keys it holds per admitted key and the state
// key's MEMORY USAGE, its record included, one caller admitting once on each of n
// fresh keys, for the kinds whose decisions the store records in the
// state's own value.
func retryTable(ctx context.Context, c *redis.Client, prefix string, quick bool, m measured) error {
	n := 20_000
	if quick {
		n = 5_000
	}
	fmt.Println("## Retry safety with go-redis's default client")
	fmt.Println()
	fmt.Printf("One caller admits once on each of %s fresh keys, go-redis's default client (MaxRetries 3), "+
		"the store as configured by default, Redis's clock.\n\n", thousands(int64(n)))
	fmt.Println("| algorithm | commands per admission | keys per admitted key | " +
		"bytes per admitted key (MEMORY USAGE) | the same with MaxRetries -1 |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	s := storeredis.New(c, storeredis.WithKeyPrefix(prefix), storeredis.WithWarnings(0, nil))
	// The same store on a client that sends each command once: no records.
	opts := *c.Options()
	opts.MaxRetries = -1
	once := redis.NewClient(&opts)
	defer once.Close()
	plain := storeredis.New(once, storeredis.WithKeyPrefix(prefix), storeredis.WithWarnings(0, nil))
	for _, alg := range throughputAlgorithms {
		name := alg.Kind().String()
		if name != "gcra" && name != "token_bucket" && name != "fixed_window" {
			continue
		}
		l, err := ratewise.New(s, alg, ratewise.WithNamespace("retries"))
		if err != nil {
			return err
		}
		if _, err := l.Allow(ctx, "warm"); err != nil { // loads the script
			return err
		}
		keysBefore, err := c.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			return err
		}
		for i := range n {
			res, err := l.Allow(ctx, fmt.Sprint("user:", i))
			if err != nil {
				return err
			}
			if !res.Allowed {
				return fmt.Errorf("%s: a first request denied", name)
			}
		}
		calls, _, err := redisinfo.Totals(ctx, c)
		if err != nil {
			return err
		}
		keysAfter, err := c.DBSize(ctx).Result()
		if err != nil {
			return err
		}
		// The state's key, with its record, by MEMORY USAGE; a once key,
		// if there were one, shows in the keys per admitted key.
		var bytes int64
		for i := range n {
			u, err := c.MemoryUsage(ctx, s.Key(fmt.Sprint("retries:user:", i), alg), 0).Result()
			if err != nil {
				return err
			}
			bytes += u
		}
		lp, err := ratewise.New(plain, alg, ratewise.WithNamespace("retries-once"))
		if err != nil {
			return err
		}
		var plainBytes int64
		for i := range n / 10 {
			if _, err := lp.Allow(ctx, fmt.Sprint("user:", i)); err != nil {
				return err
			}
			u, err := c.MemoryUsage(ctx, s.Key(fmt.Sprint("retries-once:user:", i), alg), 0).Result()
			if err != nil {
				return err
			}
			plainBytes += u
		}
		perCommands := float64(calls) / float64(n)
		perKeys := float64(keysAfter-keysBefore) / float64(n)
		perBytes := float64(bytes) / float64(n)
		m[name+".commands_per_admission.default_client"] = perCommands
		m[name+".keys_per_admitted_key.default_client"] = perKeys
		m[name+".bytes_per_admitted_key.default_client"] = perBytes
		fmt.Printf("| %s | %.2f | %.2f | %.0f B | %.0f B |\n",
			name, perCommands, perKeys, perBytes, float64(plainBytes)/float64(n/10))
	}
	fmt.Println()
	return nil
}
