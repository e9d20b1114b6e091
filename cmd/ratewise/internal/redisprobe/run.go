package redisprobe

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/storeredis"
)

// Run checks that storeredis's store runs as documented on client's Redis,
// such as a managed one, and reports each check as a Finding, in this
// order: the server's reachability and version (5.0 or later); on a
// ClusterClient that every master answers, and on any other client that the
// server is not a Cluster node; persistence, since without it a restart
// resets every limit; the eviction policy, since any but noeviction evicts
// keys early, which resets their limits; that EVAL and EVALSHA run scripts;
// the fastest round trip against budget; that a script writes keys sharing
// a hash tag, and on a *redis.Client keys of different slots, as coalesced
// batches do; that a script reads TIME and writes after it (if not,
// storeredis.WithClientTime is the answer); Redis's clock against this
// process's (see storeredis.Store.ClockOffset); and client's own settings,
// with storeredis.CheckClient against budget, the longest a caller may wait
// for a decision.
//
// It sends only what managed offerings generally allow: INFO, EVAL and
// EVALSHA (plus CLUSTER INFO on a ClusterClient, which may be refused). A
// refused command is a finding, not an error. The scripts write two or three
// keys under "ratewise:probe:" with a TTL and delete them
// at once. On a ClusterClient every master is asked; on a Ring every live
// shard.
//
// It never changes the client. When ctx ends, the check under way reports it and the checks after
// it are skipped.
func Run(ctx context.Context, client redis.UniversalClient, budget time.Duration) Report {
	p := &prober{client: client, budget: budget, tag: rand.Text()}
	p.probe(ctx)
	p.clientSettings()
	return Report{Findings: p.findings}
}

// prober runs Run's checks and collects their findings.
type prober struct {
	client   redis.UniversalClient
	budget   time.Duration
	tag      string // the hash tag of the probe's keys, unique to this run
	findings []Finding
	nodes    []node // the servers that answered INFO, or refused it
	members  string // what a node is called: "master", "shard" or ""
}

// node is one server's answer to INFO.
type node struct {
	addr    string
	info    map[string]string // nil when INFO was refused
	err     error             // INFO's error
	state   string            // cluster_state from CLUSTER INFO, or ""
	sent    time.Time
	rtt     time.Duration
	refused bool // err is Redis's reply: the server answered
}

func (p *prober) add(check string, st Status, found, change string) {
	p.findings = append(p.findings, Finding{Check: check, Status: st, Found: oneLine(found), Change: oneLine(change)})
}

// ended reports whether ctx has ended, and if so records it against check,
// the check that was under way or next.
func (p *prober) ended(ctx context.Context, check string) bool {
	err := context.Cause(ctx)
	if deadline, ok := ctx.Deadline(); ok && err == nil && !time.Now().Before(deadline) {
		// The socket's deadline, which is ctx's with ContextTimeoutEnabled,
		// can fire a moment before ctx's own timer (storeredis's Store
		// allows for the same when it reports a failure).
		err = context.DeadlineExceeded
	}
	if err == nil {
		return false
	}
	p.add(
		check,
		StatusFailure,
		fmt.Sprintf("not checked: the probe's context ended (%v); later checks skipped", err),
		"give the probe more time",
	)
	return true
}

func (p *prober) probe(ctx context.Context) {
	if p.ended(ctx, "server") || !p.server(ctx) {
		return
	}
	p.cluster()
	p.perNode(
		"persistence",
		"allow INFO (ACL +info), or check persistence in the provider's console: without it a restart resets every limit",
		persistence,
	)
	p.perNode("eviction", "allow INFO (ACL +info), or make sure maxmemory-policy is noeviction", eviction)
	if p.ended(ctx, "scripts") || !p.scripts(ctx) {
		return
	}
	if p.ended(ctx, "keys") || !p.keys(ctx) {
		return
	}
	if p.ended(ctx, "server time") {
		return
	}
	offset, unc, timeErr := storeredis.New(p.client, storeredis.WithCoalescing(0), storeredis.WithDenyCache(0)).
		ClockOffset(ctx)
	if p.ended(ctx, "server time") {
		return
	}
	p.serverTime(ctx, timeErr)
	p.clock(offset, unc, timeErr)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
