package redisprobe

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/hashslot"
)

// The checks that run scripts: EVAL and EVALSHA, the round trip, the keys
// a script may write together, and a write after TIME.

const (
	// pingSource answers EVAL and EVALSHA; it touches nothing.
	pingSource = `return 1`
	// writeSource writes every key of KEYS, with a TTL, and deletes them.
	writeSource = `for _, k in ipairs(KEYS) do redis.call('SET', k, '1', 'PX', 10000) end
return redis.call('DEL', unpack(KEYS))`
	// timeWriteSource reads TIME, then writes, as every decision does.
	timeWriteSource = `local t = redis.call('TIME') redis.call('SET', KEYS[1], t[1], 'PX', 10000)
return redis.call('DEL', KEYS[1])`
)

// key returns a probe key with the run's hash tag, or another tag.
func (p *prober) key(name, tag string) string {
	return "ratewise:probe:" + name + ":{" + tag + "}"
}

// scripts runs a script with EVAL, then three times with EVALSHA, as
// go-redis's Script.Run does once the script is cached, and reports the
// fastest round trip. It returns false when scripts do not run.
func (p *prober) scripts(ctx context.Context) bool {
	keys := []string{p.key("ping", p.tag)}
	if err := p.client.Eval(ctx, pingSource, keys).Err(); err != nil {
		switch {
		case p.ended(ctx, "scripts"):
		case redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"):
			p.add(
				"scripts",
				StatusFailure,
				"a key lives on another node: "+err.Error()+"; nothing that runs a script was checked",
				"use a *redis.ClusterClient",
			)
		default:
			p.add("scripts", StatusFailure, "EVAL refused: "+err.Error()+"; nothing that runs a script was checked",
				"use a Redis that runs Lua scripts: every decision is one")
		}
		return false
	}
	sha := redis.NewScript(pingSource).Hash()
	fastest := time.Duration(1<<63 - 1)
	for range 3 {
		start := time.Now()
		err := p.client.EvalSha(ctx, sha, keys).Err()
		fastest = min(fastest, time.Since(start))
		switch {
		case err == nil:
		case p.ended(ctx, "scripts"):
			return false
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			p.add(
				"scripts",
				StatusWarning,
				"EVALSHA answers NOSCRIPT right after EVAL ran the script: the server does not keep scripts cached",
				"every decision will take two round trips (EVALSHA, then EVAL): use an endpoint that keeps its script cache",
			)
			return true
		default:
			p.add("scripts", StatusFailure, "EVAL runs scripts, but EVALSHA is refused: "+err.Error(),
				"allow EVALSHA: go-redis runs every script with it and falls back on EVAL only on NOSCRIPT")
			return false
		}
	}
	p.add("scripts", StatusOK, "EVAL and EVALSHA run scripts", "")
	switch {
	case fastest > p.budget:
		p.add(
			"round trip",
			StatusFailure,
			fmt.Sprintf("the fastest of 3 EVALSHAs took %v, over the budget of %v", round(fastest), p.budget),
			"run the app nearer Redis, or allow decisions more time",
		)
	case fastest > p.budget/2:
		p.add(
			"round trip",
			StatusWarning,
			fmt.Sprintf("the fastest of 3 EVALSHAs took %v, over half the budget of %v", round(fastest), p.budget),
			"run the app nearer Redis, or allow decisions more time",
		)
	default:
		p.add(
			"round trip",
			StatusOK,
			fmt.Sprintf("the fastest of 3 EVALSHAs took %v (budget %v)", round(fastest), p.budget),
			"",
		)
	}
	return true
}

// keys writes two keys with one hash tag in one script, as a
// ratewise.Stack's decision does, and on a *redis.Client two keys of
// different hash slots, as a coalesced batch does. It returns false when a
// script cannot write at all.
func (p *prober) keys(ctx context.Context) bool {
	same := []string{p.key("a", p.tag), p.key("b", p.tag)}
	if err := p.client.Eval(ctx, writeSource, same).Err(); err != nil {
		if p.ended(ctx, "keys") {
			return false
		}
		switch {
		case redis.HasErrorPrefix(err, "CROSSSLOT"):
			// Single keys may still be written: the server time check
			// writes one.
			p.add("keys", StatusFailure, "keys that share a hash tag are not kept together: "+err.Error(),
				"use a server or proxy that honours hash tags: ratewise.NewStack's decisions fail here")
			return true
		case redis.HasErrorPrefix(err, "READONLY"):
			p.add(
				"keys",
				StatusFailure,
				"scripts cannot write: "+err.Error(),
				"point the client at the primary (writer) endpoint, not a replica",
			)
		case redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"):
			p.add("keys", StatusFailure, "a key lives on another node: "+err.Error(), "use a *redis.ClusterClient")
		default:
			p.add(
				"keys",
				StatusFailure,
				"scripts cannot write: "+err.Error(),
				"let scripts write keys with a TTL (SET … PX): every admission does",
			)
		}
		return false
	}
	if _, ok := p.client.(*redis.Client); !ok {
		p.add("keys", StatusOK, "a script writes keys that share a hash tag, as ratewise.NewStack's do", "")
		return true
	}
	other := p.tag + "-b"
	for hashslot.Of(p.key("b", other)) == hashslot.Of(same[0]) {
		other += "b"
	}
	if err := p.client.Eval(ctx, writeSource, []string{same[0], p.key("b", other)}).Err(); err != nil {
		if p.ended(ctx, "keys") {
			return false
		}
		p.add(
			"keys",
			StatusFailure,
			"a script cannot write keys of different hash slots, as a coalesced batch on a *redis.Client does: "+err.Error(),
			"use a *redis.ClusterClient if the offering speaks the cluster protocol, or else storeredis.WithCoalescing(0)",
		)
		return true
	}
	p.add(
		"keys",
		StatusOK,
		"a script writes keys that share a hash tag (ratewise.NewStack) and keys of different hash slots (coalesced batches)",
		"",
	)
	return true
}

// serverTime reports whether scripts can decide on Redis's clock: read TIME
// (timeErr is storeredis.Store.ClockOffset's error), then write.
func (p *prober) serverTime(ctx context.Context, timeErr error) {
	const change = "use storeredis.WithClientTime(): decisions then follow the app servers' clocks, which must agree (NTP)"
	if timeErr != nil {
		p.add("server time", StatusFailure, "a script cannot read TIME: "+redisReason(timeErr), change)
		return
	}
	err := p.client.Eval(ctx, timeWriteSource, []string{p.key("time", p.tag)}).Err()
	switch {
	case err == nil:
		p.add("server time", StatusOK, "a script reads TIME and writes after it: decisions follow Redis's clock", "")
	case p.ended(ctx, "server time"):
	default:
		p.add("server time", StatusFailure, "a script that read TIME cannot write: "+err.Error(), change)
	}
}

// redisReason is Redis's own reply in err, if there is one, without what
// wraps it, else err's text.
func redisReason(err error) string {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return rerr.Error()
	}
	return err.Error()
}
