package storeredis

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnsafeClient is wrapped by every warning CheckClient returns.
var ErrUnsafeClient = errors.New("storeredis: unsafe client setting")

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
	cluster                       bool
}

func settingsOf(c Client) (clientSettings, bool) {
	switch c := c.(type) {
	case *redis.Client:
		o := c.Options()
		return clientSettings{contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout}, true
	case *redis.ClusterClient:
		o := c.Options()
		return clientSettings{contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout,
			clusterReloads: o.ClusterStateReloadInterval, cluster: true, redirects: o.MaxRedirects}, true
	case *redis.Ring:
		o := c.Options()
		return clientSettings{contextTimeout: o.ContextTimeoutEnabled, dial: o.DialTimeout, read: o.ReadTimeout, write: o.WriteTimeout,
			poolWait: o.PoolTimeout, retries: o.MaxRetries, dialRetries: o.DialerRetries, dialRetryWait: o.DialerRetryTimeout}, true
	}
	return clientSettings{}, false
}

// CheckClient reports the settings of client that let a decision outlast
// budget, the longest a caller may wait for one, that charge a decision
// twice, or that keep a Cluster client blind to a failover. Each warning
// wraps ErrUnsafeClient and names the go-redis option to change; the
// client is not changed. It knows *redis.Client, *redis.ClusterClient and
// *redis.Ring, and returns nothing for other clients. docs/redis.md shows
// settings that pass.
func CheckClient(client Client, budget time.Duration) []error {
	s, ok := settingsOf(client)
	if !ok {
		return nil
	}
	var out []error
	warn := func(format string, args ...any) {
		out = append(out, fmt.Errorf("%w: "+format, append([]any{ErrUnsafeClient}, args...)...))
	}
	if !s.contextTimeout {
		warn("ContextTimeoutEnabled is false: go-redis ignores a context's deadline on the socket, so a decision waits for ReadTimeout (%v), not for its caller's deadline", s.read)
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
	if s.dialRetries > 0 && time.Duration(s.dialRetries+1)*max(s.dial, 0)+time.Duration(s.dialRetries)*s.dialRetryWait > budget {
		warn("DialerRetries is %d: with DialTimeout %v and DialerRetryTimeout %v, reaching a server that is down takes up to %v, over the budget of %v",
			s.dialRetries, s.dial, s.dialRetryWait, time.Duration(s.dialRetries+1)*s.dial+time.Duration(s.dialRetries)*s.dialRetryWait, budget)
	}
	if s.retries > 0 {
		out = append(out, fmt.Errorf("%w: %w", ErrUnsafeClient, &retriesWarning{option: "MaxRetries", n: s.retries}))
	}
	if s.cluster && s.redirects > 0 {
		out = append(out, fmt.Errorf("%w: %w", ErrUnsafeClient, &retriesWarning{option: "MaxRedirects", n: s.redirects}))
	}
	if s.cluster && (s.clusterReloads <= 0 || s.clusterReloads > clusterReloadBound) {
		warn("ClusterStateReloadInterval is %v: the client learns of a failover only from a MOVED or ASK reply or at that interval, and a dead master answers neither; about 1s finds a promoted replica within a second", s.clusterReloads)
	}
	return out
}

// retriesWarning is CheckClient's warning about a setting that resends
// commands, which New leaves out when the store gives every request an ID
// (WithAutoRequestIDs).
type retriesWarning struct {
	option string // MaxRetries, or a ClusterClient's MaxRedirects
	n      int
}

func (w *retriesWarning) Error() string {
	if w.option == "MaxRedirects" {
		return fmt.Sprintf("MaxRedirects is %d: besides following MOVED and ASK, a ClusterClient sends a command again after a network error or a read timeout, and a decision Redis already ran is then charged twice; give requests IDs (WithAutoRequestIDs), since -1 would also stop it following a resharding", w.n)
	}
	return fmt.Sprintf("MaxRetries is %d: go-redis sends a command again after a network error or a read timeout, and a decision Redis already ran is then charged twice, unless the store gives requests IDs (WithAutoRequestIDs); -1 turns retries off", w.n)
}

// WithWarnings has New check the client once with CheckClient against
// budget and call warn with each warning, for example to log it. With
// WithAutoRequestIDs, resent commands charge once, and neither MaxRetries
// nor a ClusterClient's MaxRedirects is reported. It never changes the
// client.
func WithWarnings(budget time.Duration, warn func(error)) Option {
	return optionFunc(func(s *Store) {
		s.warnBudget, s.warn = budget, warn
	})
}
