package redisprobe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/hashslot"
	"github.com/ratewise/ratewise/storeredis"
)

// The checks Run runs, one method or function each (see probe.go).

// server asks every server INFO and reports the version; it returns false
// when none answered at all.
func (p *prober) server(ctx context.Context) bool {
	var mu sync.Mutex
	each := func(ctx context.Context, c redis.UniversalClient, addr string) {
		n := askInfo(ctx, c, addr)
		if cc, ok := c.(*redis.Client); ok && p.members == "master" && n.err == nil {
			if s, err := cc.ClusterInfo(ctx).Result(); err == nil {
				n.state = parseInfo(s)["cluster_state"]
			}
		}
		mu.Lock()
		p.nodes = append(p.nodes, n)
		mu.Unlock()
	}
	var err error
	switch c := p.client.(type) {
	case *redis.ClusterClient:
		p.members = "master"
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { each(ctx, n, n.Options().Addr); return nil })
	case *redis.Ring:
		p.members = "shard"
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error { each(ctx, n, n.Options().Addr); return nil })
	case *redis.Client:
		each(ctx, c, c.Options().Addr)
	default:
		each(ctx, c, "")
	}
	slices.SortFunc(p.nodes, func(a, b node) int { return cmp.Compare(a.addr, b.addr) })
	if err == nil && len(p.nodes) == 0 {
		err = errors.New("no " + p.members + " is known to the client")
	}
	if err == nil {
		// The first server's error stands for all when none answered.
		err = p.nodes[0].err
		for _, n := range p.nodes {
			if n.err == nil || n.refused && !authError(n.err) {
				err = nil
			}
		}
	}
	if err != nil {
		if p.ended(ctx, "server") {
			return false
		}
		switch {
		case authError(err):
			p.add("server", StatusFailure, "authentication failed: "+err.Error(), "give the user name and password the server expects")
		case redis.HasErrorPrefix(err, "This instance has cluster support disabled"):
			p.add("cluster", StatusFailure, "a *redis.ClusterClient on a server that is not a Redis Cluster: "+err.Error()+"; nothing else checked",
				"use a *redis.Client for a standalone server or a proxy")
		default:
			p.add("server", StatusFailure, "unreachable: "+err.Error()+"; nothing else checked",
				"check the address, the credentials, TLS (rediss://) and that this host reaches the server within the client's timeouts")
		}
		return false
	}
	// Only the servers that answered are checked further.
	answered := p.nodes[:0]
	for _, n := range p.nodes {
		if n.err == nil || n.refused {
			answered = append(answered, n)
			continue
		}
		p.add("cluster", StatusFailure, fmt.Sprintf("%s %s does not answer: %v", p.members, n.addr, n.err),
			"its keys fail (store.ErrUnavailable) until it answers: fix it, and check that this host reaches every node at the address the cluster announces")
	}
	p.nodes = answered
	p.version()
	return true
}

func askInfo(ctx context.Context, c redis.UniversalClient, addr string) node {
	n := node{addr: addr, sent: time.Now()}
	s, err := c.Info(ctx).Result()
	n.rtt = time.Since(n.sent)
	if err != nil {
		var rerr redis.Error
		n.err, n.refused = err, errors.As(err, &rerr)
		return n
	}
	n.info = parseInfo(s)
	return n
}

// authError reports whether err is Redis refusing the client's credentials.
func authError(err error) bool {
	return redis.HasErrorPrefix(err, "NOAUTH") || redis.HasErrorPrefix(err, "WRONGPASS") ||
		strings.Contains(err.Error(), "failed to authenticate")
}

func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// minVersion is the oldest Redis the scripts run on: they write after
// reading TIME, which needs script effects replication, the default from
// 5.0 on (see storeredis's package doc).
var minVersion = [2]int{5, 0}

func (p *prober) version() {
	var versions []string
	for _, n := range p.nodes {
		if n.err != nil {
			p.add("server", StatusWarning, fmt.Sprintf("%sINFO refused: %v; the version is unknown", p.on(n), n.err),
				"allow INFO for this user (ACL +info), or make sure the server is Redis 5.0 or later")
			continue
		}
		v := n.info["redis_version"]
		if v == "" {
			p.add("server", StatusWarning, p.on(n)+"INFO gives no redis_version", "make sure the server is Redis 5.0 or later, or compatible with it")
			continue
		}
		if older(v, minVersion) {
			p.add("server", StatusFailure, fmt.Sprintf("%sRedis %s", p.on(n), v),
				"upgrade to Redis 5.0 or later: the scripts write after reading TIME, which needs script effects replication")
			continue
		}
		if vv := n.info["valkey_version"]; vv != "" {
			v += " (Valkey " + vv + ")"
		}
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	if len(versions) > 0 {
		found := "Redis " + strings.Join(versions, ", ")
		if p.members != "" {
			found += " on " + plural(len(p.nodes), p.members)
		}
		p.add("server", StatusOK, found, "")
	}
}

// older reports whether version v ("4.0.14") is older than min.
func older(v string, min [2]int) bool {
	parts := strings.SplitN(v, ".", 3)
	for i, want := range min {
		if i >= len(parts) {
			return false
		}
		n, err := strconv.Atoi(parts[i])
		if err != nil || n != want {
			return err == nil && n < want
		}
	}
	return false
}

// on names the node a finding is about, when there are several.
func (p *prober) on(n node) string {
	if p.members == "" {
		return ""
	}
	return p.members + " " + n.addr + ": "
}

func (p *prober) cluster() {
	switch p.members {
	case "master":
		for _, n := range p.nodes {
			if n.state != "" && n.state != "ok" {
				p.add("cluster", StatusFailure, fmt.Sprintf("master %s reports cluster_state:%s", n.addr, n.state),
					"restore the cluster: while a slot has no master that answers, its keys fail (CLUSTERDOWN)")
				return
			}
		}
		if !slices.ContainsFunc(p.findings, func(f Finding) bool { return f.Check == "cluster" }) {
			p.add("cluster", StatusOK, "Redis Cluster: "+plural(len(p.nodes), "master")+", each answers", "")
		}
	case "shard":
		if !slices.ContainsFunc(p.findings, func(f Finding) bool { return f.Check == "cluster" }) {
			p.add("cluster", StatusOK, "a Ring: "+plural(len(p.nodes), "live shard")+", each answers", "")
		}
	default:
		switch p.nodes[0].info["cluster_enabled"] {
		case "1":
			p.add("cluster", StatusFailure, "a Redis Cluster node (cluster_enabled:1) behind a single-node client: keys in other nodes' slots fail with MOVED",
				"use a *redis.ClusterClient")
		case "0":
			p.add("cluster", StatusOK, "standalone, not a Redis Cluster (cluster_enabled:0)", "")
		default:
			p.add("cluster", StatusOK, "INFO does not say whether this is a Redis Cluster node; the key checks below tell whether keys reach it", "")
		}
	}
}

const (
	// pingSource answers EVAL and EVALSHA; it touches nothing.
	pingSource = `return 1`
	// writeSource writes every key of KEYS, with a TTL, and deletes them.
	writeSource = `for _, k in ipairs(KEYS) do redis.call('SET', k, '1', 'PX', 10000) end return redis.call('DEL', unpack(KEYS))`
	// timeWriteSource reads TIME, then writes, as every decision does.
	timeWriteSource = `local t = redis.call('TIME') redis.call('SET', KEYS[1], t[1], 'PX', 10000) return redis.call('DEL', KEYS[1])`
)

// key returns a probe key with the run's hash tag, or another tag.
func (p *prober) key(name, tag string) string {
	return storeredis.DefaultPrefix + "probe:" + name + ":{" + tag + "}"
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
			p.add("scripts", StatusFailure, "a key lives on another node: "+err.Error()+"; nothing that runs a script was checked", "use a *redis.ClusterClient")
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
			p.add("scripts", StatusWarning, "EVALSHA answers NOSCRIPT right after EVAL ran the script: the server does not keep scripts cached",
				"every decision will take two round trips (EVALSHA, then EVAL): use an endpoint that keeps its script cache")
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
		p.add("round trip", StatusFailure, fmt.Sprintf("the fastest of 3 EVALSHAs took %v, over the budget of %v", round(fastest), p.budget),
			"run the app nearer Redis, or allow decisions more time")
	case fastest > p.budget/2:
		p.add("round trip", StatusWarning, fmt.Sprintf("the fastest of 3 EVALSHAs took %v, over half the budget of %v", round(fastest), p.budget),
			"run the app nearer Redis, or allow decisions more time")
	default:
		p.add("round trip", StatusOK, fmt.Sprintf("the fastest of 3 EVALSHAs took %v (budget %v)", round(fastest), p.budget), "")
	}
	return true
}

// keys writes two keys with one hash tag in one script, as a
// ratewise.Set's decision does, and on a *redis.Client two keys of
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
				"use a server or proxy that honours hash tags: ratewise.NewSet's decisions fail here")
			return true
		case redis.HasErrorPrefix(err, "READONLY"):
			p.add("keys", StatusFailure, "scripts cannot write: "+err.Error(), "point the client at the primary (writer) endpoint, not a replica")
		case redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK"):
			p.add("keys", StatusFailure, "a key lives on another node: "+err.Error(), "use a *redis.ClusterClient")
		default:
			p.add("keys", StatusFailure, "scripts cannot write: "+err.Error(), "let scripts write keys with a TTL (SET … PX): every admission does")
		}
		return false
	}
	if _, ok := p.client.(*redis.Client); !ok {
		p.add("keys", StatusOK, "a script writes keys that share a hash tag, as ratewise.NewSet's do", "")
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
		p.add("keys", StatusFailure, "a script cannot write keys of different hash slots, as a coalesced batch on a *redis.Client does: "+err.Error(),
			"use a *redis.ClusterClient if the offering speaks the cluster protocol, or else storeredis.WithCoalescing(0)")
		return true
	}
	p.add("keys", StatusOK, "a script writes keys that share a hash tag (ratewise.NewSet) and keys of different hash slots (coalesced batches)", "")
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

// perNode runs check on every node that answered INFO and reports what it
// found: once, when every node found the same, else once per node.
// unknown is what to change when a node refused INFO.
func (p *prober) perNode(name, unknown string, check func(info map[string]string) (Status, string, string)) {
	type outcome struct {
		st            Status
		found, change string
	}
	var got []outcome
	var addrs [][]string
	for _, n := range p.nodes {
		var o outcome
		if n.err != nil {
			o = outcome{StatusWarning, "unknown: INFO refused (" + n.err.Error() + ")", unknown}
		} else {
			o.st, o.found, o.change = check(n.info)
		}
		if i := slices.Index(got, o); i >= 0 {
			addrs[i] = append(addrs[i], n.addr)
			continue
		}
		got = append(got, o)
		addrs = append(addrs, []string{n.addr})
	}
	for i, o := range got {
		found := o.found
		switch {
		case p.members == "":
		case len(got) == 1:
			found += fmt.Sprintf(" (every %s)", p.members)
		default:
			found = p.members + " " + strings.Join(addrs[i], ", ") + ": " + found
		}
		p.add(name, o.st, found, o.change)
	}
}

func persistence(info map[string]string) (Status, string, string) {
	switch info["aof_enabled"] {
	case "1":
		return StatusOK, "AOF on: a restart keeps limits, up to the last fsync", ""
	case "":
		return StatusWarning, "INFO persistence does not say whether AOF is on",
			"check persistence in the provider's console: without it a restart resets every limit"
	}
	// INFO does not show the save schedule; a snapshot since the start
	// shows there is one (rdb_saves is from Redis 7.0 on).
	saves, _ := strconv.Atoi(info["rdb_saves"])
	if last, err := strconv.Atoi(info["rdb_last_bgsave_time_sec"]); saves > 0 || err == nil && last >= 0 {
		return StatusOK, "RDB snapshots, no AOF: a restart forgets what changed since the last snapshot", ""
	}
	return StatusWarning, "no AOF, and no RDB snapshot since the server started: a restart forgets every limit, so each key may spend its whole limit again at once",
		"if a reset limit is costly (a daily or monthly quota), turn on AOF (appendonly yes, appendfsync everysec); for short windows a reset is usually acceptable"
}

func eviction(info map[string]string) (Status, string, string) {
	policy := info["maxmemory_policy"]
	limit := info["maxmemory_human"]
	switch {
	case policy == "":
		return StatusWarning, "INFO memory does not give maxmemory_policy",
			"make sure maxmemory-policy is noeviction: any other evicts ratewise's keys early, which resets their limits"
	case policy == "noeviction":
		return StatusOK, "maxmemory-policy noeviction: a full Redis refuses writes, and decisions fail (store.ErrUnavailable) rather than forget limits", ""
	case info["maxmemory"] == "0":
		return StatusWarning, "maxmemory-policy " + policy + " with no maxmemory: nothing is evicted now, but with a maxmemory ratewise's keys would be, resetting their limits",
			"set maxmemory-policy noeviction"
	}
	return StatusFailure, fmt.Sprintf("maxmemory-policy %s (maxmemory %s): when memory runs short Redis evicts ratewise's keys, which resets their limits; every ratewise key has a TTL, so volatile-* policies evict them too", policy, limit),
		"set maxmemory-policy noeviction, or give the limiter a Redis of its own, sized for its keys"
}

// clockWarning is the offset between this process's clock and Redis's
// above which Run warns when decisions must follow the app's clocks.
const clockWarning = time.Second

// clock reports Redis's clock against this process's: measured inside a
// script when scripts read TIME, else from INFO's server_time_usec.
func (p *prober) clock(offset, unc time.Duration, timeErr error) {
	if timeErr == nil {
		// Decisions follow Redis's clock: however large, the offset moves
		// none of them.
		p.add("clock", StatusOK, fmt.Sprintf("Redis's clock is %v %s this host's (±%v); decisions follow Redis's clock, so it moves none (it would with WithClientTime)",
			round(offset.Abs()), aheadOrBehind(offset), round(unc)), "")
		return
	}
	for _, n := range p.nodes {
		usec, err := strconv.ParseInt(n.info["server_time_usec"], 10, 64)
		if err != nil {
			continue
		}
		offset, unc = time.UnixMicro(usec).Sub(n.sent.Add(n.rtt/2)), n.rtt/2
		found := fmt.Sprintf("INFO's server_time_usec is %v %s this host's clock (±%v)", round(offset.Abs()), aheadOrBehind(offset), round(unc))
		if offset.Abs() > clockWarning+unc {
			p.add("clock", StatusWarning, found+": with WithClientTime the app servers' clocks decide, and this one is far from Redis's", "sync this host's clock (NTP), and every app server's")
			return
		}
		p.add("clock", StatusOK, found, "")
		return
	}
	p.add("clock", StatusWarning, "Redis's clock is unknown: scripts cannot read TIME and INFO gives no server_time_usec",
		"with WithClientTime the app servers' clocks decide: keep them in sync (NTP)")
}

// plural is "1 master", "3 masters".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func aheadOrBehind(d time.Duration) string {
	if d < 0 {
		return "behind"
	}
	return "ahead of"
}

// round rounds d for reading: to the microsecond below a millisecond, else
// to a tenth of a millisecond.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(100 * time.Microsecond)
}

// clientSettings reports storeredis.CheckClient's warnings, each with the
// setting that passes for the budget, as docs/redis.md's Client settings
// show it for 100ms.
func (p *prober) clientSettings() {
	warnings := storeredis.CheckClient(p.client, p.budget)
	if !knownToCheckClient(p.client) {
		p.add("client settings", StatusOK, fmt.Sprintf("not checked: CheckClient does not know a %T", p.client), "")
		return
	}
	if len(warnings) == 0 {
		p.add("client settings", StatusOK, fmt.Sprintf("no setting lets a decision outlast the budget of %v, take several attempts or miss a failover", p.budget), "")
		return
	}
	for _, w := range warnings {
		msg := strings.TrimPrefix(w.Error(), storeredis.ErrUnsafeClient.Error()+": ")
		option, _, _ := strings.Cut(msg, " ")
		p.add("client settings", StatusWarning, msg, recommended(option, p.budget))
	}
}

// knownToCheckClient reports whether storeredis.CheckClient inspects c:
// its doc names the clients it knows, and it returns nothing for any other,
// which must not read as "nothing to change".
func knownToCheckClient(c redis.UniversalClient) bool {
	switch c.(type) {
	case *redis.Client, *redis.ClusterClient, *redis.Ring:
		return true
	}
	return false
}

// recommended is the value of a go-redis option that CheckClient accepts
// for budget.
func recommended(option string, budget time.Duration) string {
	switch option {
	case "ContextTimeoutEnabled":
		return "ContextTimeoutEnabled: true"
	case "ReadTimeout", "WriteTimeout", "PoolTimeout":
		return fmt.Sprintf("%s: %v", option, budget/2)
	case "DialTimeout":
		return fmt.Sprintf("DialTimeout: %v", budget*3/10)
	case "DialerRetries":
		return fmt.Sprintf("DialerRetries: 1, DialerRetryTimeout: %v", budget/10)
	case "MaxRetries":
		return "MaxRetries: -1"
	case "ClusterStateReloadInterval":
		return "ClusterStateReloadInterval: time.Second"
	}
	return "see docs/redis.md, Client settings"
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
