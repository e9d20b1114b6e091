package redisprobe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The checks of the server's configuration as INFO shows it, node by node:
// persistence and the eviction policy.

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
	return StatusWarning, "no AOF, and no RDB snapshot since the server started: a restart forgets every limit, " +
			"so each key may spend its whole limit again at once",
		"if a reset limit is costly (a daily or monthly quota), turn on AOF (appendonly yes, appendfsync " +
			"everysec); for short windows a reset is usually acceptable"
}

func eviction(info map[string]string) (Status, string, string) {
	policy := info["maxmemory_policy"]
	limit := info["maxmemory_human"]
	switch {
	case policy == "":
		return StatusWarning, "INFO memory does not give maxmemory_policy",
			"make sure maxmemory-policy is noeviction: any other evicts ratewise's keys early, which resets their limits"
	case policy == "noeviction":
		return StatusOK, "maxmemory-policy noeviction: a full Redis refuses writes, and decisions fail " +
			"(store.ErrUnavailable) rather than forget limits", ""
	case info["maxmemory"] == "0":
		return StatusWarning, "maxmemory-policy " + policy + " with no maxmemory: nothing is evicted now, but with " +
				"a maxmemory ratewise's keys would be, resetting their limits",
			"set maxmemory-policy noeviction"
	}
	return StatusFailure, fmt.Sprintf(
			"maxmemory-policy %s (maxmemory %s): when memory runs short Redis evicts ratewise's keys, which resets "+
				"their limits; every ratewise key has a TTL, so volatile-* policies evict them too",
			policy,
			limit,
		),
		"set maxmemory-policy noeviction, or give the limiter a Redis of its own, sized for its keys"
}
