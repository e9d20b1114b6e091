// Package storeredis is the Redis ratewise store, for many app instances
// sharing one limit, on standalone Redis, Redis Cluster, Sentinel or a Ring.
// It needs Redis 5.0 or later.
//
// Every decision is one EVALSHA of the algorithm's Lua script, which runs the
// same step as the algorithm's Go Decide inside Redis, atomically: Go never
// reads state and writes it back. Concurrent decisions share round trips,
// several decided by one script call (WithCoalescing), and a repeated
// request that a recent denial still covers is denied without one
// (WithDenyCache). A script missing from Redis's cache (after a
// restart, a failover or SCRIPT FLUSH) is sent again with EVAL, which runs it
// and caches it: that one decision takes two round trips, every later one
// takes one again.
//
// By default a script reads Redis's own clock (TIME), so app servers whose
// clocks disagree still share one timeline, and the now a limiter passes is
// ignored. WithClientTime uses the caller's now instead. Either way a key
// never decides at a time earlier than the latest it has seen (see package
// algorithms), so a failover to a replica whose clock is behind admits
// nothing extra. Scripts write after reading TIME, which needs script
// effects replication: the default from Redis 5.0, and why that is the
// oldest Redis supported.
//
// Keys are prefix + algorithm + ":" + scope + ":{" + escaped key + "}", such
// as "ratewise:sliding_log:1m:{alice}", so each key is its own Redis Cluster
// hash tag, and limiters with different windows or periods keep separate
// state. A kind whose state has changed layout names the layout's version
// after the algorithm, as in "ratewise:gcra:v3:1s:{alice}", so that
// ratewise versions running side by side during a deploy never read each
// other's state (see Key).
// Every write sets a TTL of the decision's ResetAfter, rounded up to the
// millisecond, and one millisecond more (plus a second in
// client-time mode), so idle keys vanish on their own.
package storeredis

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/coalesce"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/denycache"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

var _ store.Store = (*Store)(nil)

// defaultKeyPrefix starts every key the store writes, unless WithKeyPrefix
// says otherwise.
const defaultKeyPrefix = "ratewise:"

// Store is the Redis store. It is safe for concurrent use.
type Store struct {
	client     redis.Scripter
	prefix     string
	clientTime bool
	coalesce   int                          // WithCoalescing's n
	co         *coalesce.Coalescer[batched] // nil when nothing is coalesced
	denyCache  int                          // WithDenyCache's n
	deny       *denycache.Cache             // nil when off
	warnBudget time.Duration
	warnSet    bool        // WithWarnings was given
	warn       func(error) // WithWarnings's hook, or nil
	resends    bool        // whether go-redis may send a command twice (see resends)
	ids        *idMaker    // the store's request IDs, nil unless it resends
	horizon    int64       // µs: how long go-redis may resend a command (resendHorizon)
	replicas   replicaWait // WithReplicas's; its n is 0 when off
	writers    *writers    // records its coalesced decisions (writers.go); nil unless it resends and coalesces
}

// Option configures a Store.
type Option interface {
	apply(*Store)
}

type optionFunc func(*Store)

func (f optionFunc) apply(s *Store) { f(s) }

// WithKeyPrefix replaces the default prefix, "ratewise:". With WithKeyPrefix("rl:"), the key "alice"
// of a GCRA limiter with a rate per second is stored as "rl:gcra:1s:{alice}".
//
// Braces in the prefix are escaped as in keys ("{" becomes "%7B", "}"
// "%7D", "%" "%25"): a prefix with a hash tag, such as "{rl}:", would put
// every key in one Redis Cluster slot, so the key's own tag must stay the
// only one.
func WithKeyPrefix(prefix string) Option {
	return optionFunc(func(s *Store) { s.prefix = string(appendEscaped(nil, prefix)) })
}

// WithClientTime makes scripts decide with the now the limiter passes (its
// clock, ratewise.WithClock) instead of Redis's TIME. Tests use it to drive time; it also suits
// deployments whose app servers keep their clocks in sync and want the
// decision to follow them. Clocks that disagree then disagree on windows.
// It is also the answer where scripts cannot read TIME, as on some managed
// and serverless Redis offerings (`ratewise doctor` reports it).
//
// A clock reading taken before a call waits for a connection can reach Redis
// after a key it should still see has expired on Redis's clock, so in this
// mode keys live a second longer than their state counts.
func WithClientTime() Option {
	return optionFunc(func(s *Store) { s.clientTime = true })
}

// New returns a store on client. The store needs scripting from go-redis,
// which *redis.Client, *redis.ClusterClient, *redis.Ring and Sentinel
// failover clients all provide.
func New(client redis.Scripter, opts ...Option) *Store {
	s := &Store{client: client, prefix: defaultKeyPrefix, coalesce: defaultCoalescing, denyCache: defaultDenyCache}
	for _, o := range opts {
		o.apply(s)
	}
	s.resends = resends(client)
	if s.resends {
		s.ids = newIDMaker()
		s.horizon = resendHorizon(client).Microseconds()
	}
	if s.coalesce > 0 && s.replicas.n == 0 {
		s.co = s.newCoalescer(client)
	}
	if s.ids != nil && s.co != nil {
		s.writers = newWriters()
	}
	if s.denyCache > 0 {
		s.deny = denycache.New(s.denyCache, s.clientTime)
	}
	switch {
	case s.warn != nil:
		for _, w := range CheckClient(client, s.warnBudget) {
			s.warn(w)
		}
	case !s.warnSet:
		logWarnings(CheckClient(client, defaultWarnBudget))
	}
	return s
}

// Close waits until the goroutines that send shared round trips
// (WithCoalescing) have sent every decision queued and returned. Calls
// after Close still decide, each in a round trip of its own. It does not
// close the client, which is the caller's; close a leasing layer over the
// store (lease.Store.Close) before it. It returns nil.
func (s *Store) Close() error {
	s.co.Close()
	return nil
}

// Batches returns how many shared round trips (WithCoalescing) the store
// has sent since it was made, and how many decisions they carried: their
// ratio is the mean batch. Both are 0 when nothing is coalesced.
func (s *Store) Batches() (batches, decisions int64) {
	c := s.co.Counts()
	return c.Batches, c.Batched
}

// scriptFor returns alg's decision script, or an error wrapping
// store.ErrUnsupported if alg is not of its Kind's own type (such as a type
// that embeds one of package algorithms' types). Every registered Kind has
// a script (internal/scripts' TestEveryDriverAssembles).
func scriptFor(alg algorithms.Algorithm) (*redis.Script, error) {
	if err := algo.CheckKind(alg); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrUnsupported, err)
	}
	return scripts.Decision(alg.Kind())
}

// Capabilities reports the store's clock, the server's unless
// WithClientTime, and that it applies request IDs once.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{OwnClock: !s.clientTime, RequestIDs: true}
}
