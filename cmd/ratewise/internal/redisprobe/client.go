package redisprobe

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/storeredis"
)

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
		p.add(
			"client settings",
			StatusOK,
			fmt.Sprintf(
				"no setting lets a decision outlast the budget of %v, take several attempts or miss a failover",
				p.budget,
			),
			"",
		)
		return
	}
	for _, w := range warnings {
		msg := strings.TrimPrefix(w.Error(), "storeredis: unsafe client setting: ")
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
