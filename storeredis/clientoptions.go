package storeredis

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientOptions returns a copy of o with the go-redis settings that a
// limiter's client needs, for callers that wait at most budget for a
// decision, so that CheckClient(client, budget) finds nothing to warn of:
//
//	rdb := redis.NewClient(storeredis.ClientOptions(&redis.Options{Addr: addr}, 500*time.Millisecond))
//
// Give it the deadline your callers give a decision (httplimit's
// WithTimeout, 500ms by default): a smaller budget fails, with
// store.ErrUnavailable, every decision that takes longer than it, as one
// on a busy host may. It sets these fields, whatever o held in them, and leaves every other one
// (the addresses, credentials, TLS, PoolSize, ...) as o has it:
//
//   - ContextTimeoutEnabled true: a caller's deadline ends its wait on the
//     socket.
//   - ReadTimeout, WriteTimeout and PoolTimeout budget, DialTimeout 40% of
//     it, DialerRetries 1 and DialerRetryTimeout 10% of it: a caller with
//     no deadline of its own, and a shared round trip, wait at most budget
//     for each step, and a dial with its retry takes 90% of it.
//   - MaxRetries -1: go-redis sends each command once, so a decision is
//     one attempt, and on a *redis.Client the store keeps no record of its
//     writes (docs/redis.md, "Retries and request IDs"). A ClusterClient
//     still resends on MaxRedirects, to follow MOVED and ASK, which the
//     store's request IDs make safe.
//   - ClusterStateReloadInterval one second, on *redis.ClusterOptions: the
//     client finds a promoted replica within a second of a failover.
//
// A budget of 0 or less means the default of 500ms, httplimit's own
// timeout for a decision; one under a millisecond counts as a millisecond,
// since no round trip fits in less, and CheckClient then warns of the
// timeouts that exceed it. A nil o stands for an empty options value: a
// client on go-redis's default address. o is not changed; to set one of
// these fields otherwise, set it on the result.
//
// *redis.FailoverOptions (Sentinel, with redis.NewFailoverClient) and
// *redis.RingOptions take the same settings. For *redis.UniversalOptions,
// which has no ClusterStateReloadInterval, pass what its Cluster, Simple or
// Failover method returns.
func ClientOptions[O *redis.Options | *redis.ClusterOptions | *redis.FailoverOptions | *redis.RingOptions](
	o O,
	budget time.Duration,
) O {
	t := timeoutsFor(budget)
	switch o := any(o).(type) {
	case *redis.Options:
		c := copyOrNew(o)
		c.ContextTimeoutEnabled, c.MaxRetries = true, -1
		c.DialTimeout, c.DialerRetries, c.DialerRetryTimeout = t.dial, 1, t.dialRetryWait
		c.ReadTimeout, c.WriteTimeout, c.PoolTimeout = t.io, t.io, t.io
		return any(c).(O)
	case *redis.ClusterOptions:
		c := copyOrNew(o)
		c.ContextTimeoutEnabled, c.MaxRetries = true, -1
		c.DialTimeout, c.DialerRetries, c.DialerRetryTimeout = t.dial, 1, t.dialRetryWait
		c.ReadTimeout, c.WriteTimeout, c.PoolTimeout = t.io, t.io, t.io
		c.ClusterStateReloadInterval = clusterReload
		return any(c).(O)
	case *redis.FailoverOptions:
		c := copyOrNew(o)
		c.ContextTimeoutEnabled, c.MaxRetries = true, -1
		c.DialTimeout, c.DialerRetries, c.DialerRetryTimeout = t.dial, 1, t.dialRetryWait
		c.ReadTimeout, c.WriteTimeout, c.PoolTimeout = t.io, t.io, t.io
		return any(c).(O)
	case *redis.RingOptions:
		c := copyOrNew(o)
		c.ContextTimeoutEnabled, c.MaxRetries = true, -1
		c.DialTimeout, c.DialerRetries, c.DialerRetryTimeout = t.dial, 1, t.dialRetryWait
		c.ReadTimeout, c.WriteTimeout, c.PoolTimeout = t.io, t.io, t.io
		return any(c).(O)
	}
	return o // unreachable: the constraint admits only the types above
}

// copyOrNew returns a copy of *o, or a new zero value for a nil o.
func copyOrNew[T any](o *T) *T {
	c := new(T)
	if o != nil {
		*c = *o
	}
	return c
}

const (
	// defaultClientBudget is ClientOptions's budget for one of 0 or less:
	// httplimit's timeout for a decision, so that a client built for it
	// never gives up on a decision before the middleware does.
	defaultClientBudget = 500 * time.Millisecond
	// minClientBudget is the least budget ClientOptions sets timeouts for.
	minClientBudget = time.Millisecond
	// clusterReload is the ClusterStateReloadInterval ClientOptions sets,
	// well under CheckClient's bound (clusterReloadBound).
	clusterReload = time.Second
)

// clientTimeouts are the timeouts ClientOptions sets for one budget.
type clientTimeouts struct {
	dial, dialRetryWait time.Duration // DialTimeout, DialerRetryTimeout
	io                  time.Duration // ReadTimeout, WriteTimeout and PoolTimeout
}

// timeoutsFor returns the timeouts for budget (see ClientOptions). Each is
// a share of the budget, divided before it is multiplied so that no budget
// overflows; two dials and the wait between them take 90% of it, within
// CheckClient's bound.
func timeoutsFor(budget time.Duration) clientTimeouts {
	if budget <= 0 {
		budget = defaultClientBudget
	}
	budget = max(budget, minClientBudget)
	return clientTimeouts{dial: budget / 10 * 4, dialRetryWait: budget / 10, io: budget}
}
