package storeredis

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// errUnsafeClient is wrapped by every warning CheckClient returns.
var errUnsafeClient = errors.New("storeredis: unsafe client setting")

// clusterReloadBound is the longest ClusterStateReloadInterval CheckClient
// accepts: a ClusterClient learns of a failover only from a MOVED or ASK
// reply or at that interval, and a dead master answers neither.
const clusterReloadBound = 5 * time.Second

// clientSettings are the go-redis settings CheckClient weighs, whichever
// kind of client holds them.
type clientSettings struct {
	contextTimeout                bool
	dial, read, write, poolWait   time.Duration
	retries, dialRetries          int
	redirects                     int // a ClusterClient's MaxRedirects
	dialRetryWait, clusterReloads time.Duration
	backoff                       time.Duration // MaxRetryBackoff
	cluster                       bool
}

func settingsOf(c redis.Scripter) (clientSettings, bool) {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return clientSettings{
			contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout,
			backoff: o.MaxRetryBackoff,
		}, true
	case *redis.ClusterClient:
		o := c.Options()
		return clientSettings{
			contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout,
			clusterReloads: o.ClusterStateReloadInterval, cluster: true, redirects: o.MaxRedirects,
			backoff: o.MaxRetryBackoff,
		}, true
	case *redis.Ring:
		o := c.Options()
		return clientSettings{
			contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout,
			backoff: o.MaxRetryBackoff,
		}, true
	}
	return clientSettings{}, false
}

// unboundedResends is how long the store keeps the record of a write for a
// client whose settings let it resend after any time: one with a timeout
// that never fires, or one it cannot inspect.
const unboundedResends = 10 * time.Minute

// resendHorizon is how long after a command was first sent go-redis may
// still send it again (0 for a client that sends once): each resend follows
// an attempt that failed, which takes at most a wait for a connection, a
// dial with its retries, a write, a read and a backoff, and a ClusterClient
// makes up to MaxRedirects+1 rounds of its nodes' MaxRetries+1 attempts.
func resendHorizon(c redis.Scripter) time.Duration {
	s, ok := settingsOf(c)
	if !ok {
		return unboundedResends
	}
	attempts := max(s.retries, 0) + 1
	if s.cluster {
		attempts *= max(s.redirects, 0) + 1
	}
	if attempts == 1 {
		return 0
	}
	for _, d := range []time.Duration{s.poolWait, s.dial, s.write, s.read} {
		if d <= 0 {
			return unboundedResends
		}
	}
	dialRetries := time.Duration(max(s.dialRetries, 0))
	attempt := s.poolWait + (dialRetries+1)*s.dial + dialRetries*max(
		s.dialRetryWait,
		0,
	) + s.write + s.read + max(
		s.backoff,
		0,
	)
	return min(time.Duration(attempts-1)*attempt, unboundedResends)
}

// CheckClient reports the settings of client that let a decision outlast
// budget, the longest a caller may wait for one, that make a decision take
// several attempts (and the store keep a record of every write for as long
// as go-redis may resend it), or that keep a Cluster client blind to a
// failover. Each warning names the go-redis option to change, as in
// "storeredis: unsafe client setting: ReadTimeout ..."; the client is not
// changed. It knows *redis.Client, *redis.ClusterClient and
// *redis.Ring, and returns nothing for other clients. docs/redis.md shows
// settings that pass.
func CheckClient(client redis.Scripter, budget time.Duration) []error {
	s, ok := settingsOf(client)
	if !ok {
		return nil
	}
	var out []error
	warn := func(format string, args ...any) {
		out = append(out, fmt.Errorf("%w: "+format, append([]any{errUnsafeClient}, args...)...))
	}
	if !s.contextTimeout {
		warn(
			"ContextTimeoutEnabled is false: go-redis ignores a context's deadline on the socket, so a decision waits "+
				"for ReadTimeout (%v), not for its caller's deadline",
			s.read,
		)
	}
	for _, t := range []struct {
		name string
		d    time.Duration
	}{{"ReadTimeout", s.read}, {"WriteTimeout", s.write}, {"DialTimeout", s.dial}, {"PoolTimeout", s.poolWait}} {
		switch {
		case t.d <= 0:
			warn("%s sets no timeout: without a context deadline, a call waits on a stalled server forever", t.name)
		case t.d > budget:
			warn("%s is %v, over the budget of %v: a caller without a deadline of its own waits that long", t.name, t.d, budget)
		}
	}
	if s.dialRetries > 0 &&
		time.Duration(s.dialRetries+1)*max(s.dial, 0)+time.Duration(s.dialRetries)*s.dialRetryWait > budget {
		warn(
			"DialerRetries is %d: with DialTimeout %v and DialerRetryTimeout %v, reaching a server that is down takes "+
				"up to %v, over the budget of %v",
			s.dialRetries,
			s.dial,
			s.dialRetryWait,
			time.Duration(s.dialRetries+1)*s.dial+time.Duration(s.dialRetries)*s.dialRetryWait,
			budget,
		)
	}
	if s.retries > 0 {
		warn(
			"MaxRetries is %d: go-redis sends a command again after a network error or a read timeout, so a decision "+
				"can take %d attempts' time; the store then keeps a record of each write in Redis for up to %v, "+
				"the longest go-redis may resend it, so that it is applied once; -1 turns retries off and needs "+
				"neither",
			s.retries,
			s.retries+1,
			resendHorizon(client).Round(time.Millisecond),
		)
	}
	if s.cluster && (s.clusterReloads <= 0 || s.clusterReloads > clusterReloadBound) {
		warn(
			"ClusterStateReloadInterval is %v: the client learns of a failover only from a MOVED or ASK reply or at "+
				"that interval, and a dead master answers neither; about 1s finds a promoted replica within a "+
				"second",
			s.clusterReloads,
		)
	}
	return out
}

// WithWarnings has New check the client with CheckClient against budget
// and call warn with each warning, in place of the default: without
// WithWarnings, New checks the client against a budget of one second and
// logs each warning through slog.Default at level Warn, once per process.
// WithWarnings(0, nil) turns the check off. It never changes the client.
func WithWarnings(budget time.Duration, warn func(error)) Option {
	return optionFunc(func(s *Store) {
		s.warnBudget, s.warn, s.warnSet = budget, warn, true
	})
}

// defaultWarnBudget is the budget New checks a client against without
// WithWarnings.
const defaultWarnBudget = time.Second

// logged holds the warnings already logged by New's default check.
var logged sync.Map

// logWarnings logs each warning through slog.Default, the first time this
// process meets it.
func logWarnings(warnings []error) {
	for _, w := range warnings {
		if _, seen := logged.LoadOrStore(w.Error(), true); !seen {
			slog.Warn(w.Error(), "turn_off", "storeredis.WithWarnings(0, nil)")
		}
	}
}
