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
)

// The server and cluster checks: who answers INFO, which version, and
// whether the client suits the server's cluster mode.

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
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			each(ctx, n, n.Options().Addr)
			return nil
		})
	case *redis.Ring:
		p.members = "shard"
		err = c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			each(ctx, n, n.Options().Addr)
			return nil
		})
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
			p.add(
				"server",
				StatusFailure,
				"authentication failed: "+err.Error(),
				"give the user name and password the server expects",
			)
		case redis.HasErrorPrefix(err, "This instance has cluster support disabled"):
			p.add(
				"cluster",
				StatusFailure,
				"a *redis.ClusterClient on a server that is not a Redis Cluster: "+err.Error()+"; nothing else checked",
				"use a *redis.Client for a standalone server or a proxy",
			)
		default:
			p.add(
				"server",
				StatusFailure,
				"unreachable: "+err.Error()+"; nothing else checked",
				"check the address, the credentials, TLS (rediss://) and that this host reaches the server within the "+
					"client's timeouts",
			)
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
		p.add(
			"cluster",
			StatusFailure,
			fmt.Sprintf("%s %s does not answer: %v", p.members, n.addr, n.err),
			"its keys fail (store.ErrUnavailable) until it answers: fix it, and check that this host reaches every "+
				"node at the address the cluster announces",
		)
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
			p.add(
				"server",
				StatusWarning,
				p.on(n)+"INFO gives no redis_version",
				"make sure the server is Redis 5.0 or later, or compatible with it",
			)
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
			p.add(
				"cluster",
				StatusFailure,
				"a Redis Cluster node (cluster_enabled:1) behind a single-node client: keys in other nodes' slots fail with MOVED",
				"use a *redis.ClusterClient",
			)
		case "0":
			p.add("cluster", StatusOK, "standalone, not a Redis Cluster (cluster_enabled:0)", "")
		default:
			p.add(
				"cluster",
				StatusOK,
				"INFO does not say whether this is a Redis Cluster node; the key checks below tell whether keys reach it",
				"",
			)
		}
	}
}

// plural is "1 master", "3 masters".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
