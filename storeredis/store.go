// Package storeredis is the Redis ratewise store, for many app instances
// sharing one limit, on standalone Redis, Redis Cluster, Sentinel or a Ring.
//
// Every decision is one EVALSHA of the algorithm's Lua script, which runs the
// same step as the algorithm's Go Decide inside Redis, atomically: Go never
// reads state and writes it back. A script missing from Redis's cache (after a
// restart, a failover or SCRIPT FLUSH) is sent again with EVAL, which runs it
// and caches it in the same round trip.
//
// By default a script reads Redis's own clock (TIME), so app servers whose
// clocks disagree still share one timeline, and the now a limiter passes is
// ignored. WithClientTime uses the caller's now instead.
//
// Keys are prefix + algorithm + ":{" + escaped key + "}", so each key is its
// own Redis Cluster hash tag. Every write sets a TTL of the decision's
// ResetAfter, rounded up to the millisecond, so idle keys vanish on their own.
package storeredis

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

var (
	_ store.Store     = (*Store)(nil)
	_ store.Inspector = (*Store)(nil)
)

// DefaultPrefix starts every key the store writes.
const DefaultPrefix = "ratewise:"

//go:embed scripts/*.lua
var scriptFiles embed.FS

// Client is what the store needs from go-redis: scripting. *redis.Client,
// *redis.ClusterClient, *redis.Ring and Sentinel failover clients all
// implement it.
type Client = redis.Scripter

// Store is the Redis store. It is safe for concurrent use.
type Store struct {
	client     Client
	prefix     string
	clientTime bool
	decide     map[string]*redis.Script // by algorithm name

	// params caches each algorithm value's Args, boxed for go-redis, which
	// saves several allocations per decision. Algorithm values are
	// comparable, so they are the key; the cache stops growing at
	// maxCachedParams entries, for callers that build limits on the fly.
	params      sync.Map // algorithms.Algorithm → []any
	paramsCount atomic.Int64
}

const maxCachedParams = 64

var (
	resetScript = redis.NewScript(`return redis.call('DEL', KEYS[1])`)
	ttlScript   = redis.NewScript(`return redis.call('PTTL', KEYS[1])`)
)

// decideScripts are the decision scripts by algorithm name: the prelude
// followed by the algorithm's file.
var decideScripts = func() map[string]*redis.Script {
	prelude := mustRead("prelude.lua")
	scripts := map[string]*redis.Script{}
	for _, alg := range []algorithms.Algorithm{
		algorithms.FixedWindow{}, algorithms.SlidingLog{}, algorithms.SlidingWindow{},
		algorithms.TokenBucket{}, algorithms.GCRA{},
	} {
		scripts[alg.Name()] = redis.NewScript(prelude + "\n" + mustRead(alg.Name()+".lua"))
	}
	return scripts
}()

func mustRead(name string) string {
	b, err := scriptFiles.ReadFile("scripts/" + name)
	if err != nil {
		panic("storeredis: embedded script missing: " + name) // a build defect, caught by every test
	}
	return string(b)
}

// Option configures a Store.
type Option interface {
	apply(*Store)
}

type optionFunc func(*Store)

func (f optionFunc) apply(s *Store) { f(s) }

// WithPrefix replaces DefaultPrefix. With WithPrefix("rl:"), a GCRA limiter's
// key "alice" is stored as "rl:gcra:{alice}".
func WithPrefix(prefix string) Option {
	return optionFunc(func(s *Store) { s.prefix = prefix })
}

// WithClientTime makes scripts decide with the now the limiter passes (its
// Clock) instead of Redis's TIME. Tests use it to drive time; it also suits
// deployments whose app servers keep their clocks in sync and want the
// decision to follow them. Clocks that disagree then disagree on windows.
func WithClientTime() Option {
	return optionFunc(func(s *Store) { s.clientTime = true })
}

// New returns a store on client.
func New(client Client, opts ...Option) *Store {
	s := &Store{client: client, prefix: DefaultPrefix, decide: decideScripts}
	for _, o := range opts {
		o.apply(s)
	}
	return s
}

// Key returns the Redis key that holds alg's state for key.
func (s *Store) Key(key string, alg algorithms.Algorithm) string {
	return s.prefix + alg.Name() + ":{" + escapeKey(key) + "}"
}

// escapeKey makes a key safe inside a hash tag and keeps distinct keys
// distinct: "%" becomes "%25", "{" "%7B" and "}" "%7D". With no brace left,
// the tag is the whole escaped key; with "%" escaped too, the mapping is
// one-to-one. Other bytes, invalid UTF-8 included, pass through, since Redis
// keys are binary-safe.
func escapeKey(key string) string {
	if !strings.ContainsAny(key, "%{}") {
		return key
	}
	return keyEscaper.Replace(key)
}

var keyEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// Decide runs alg's script for key in one round trip.
func (s *Store) Decide(ctx context.Context, key string, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error) {
	script, ok := s.decide[alg.Name()]
	if !ok {
		return algorithms.Result{}, fmt.Errorf("%w: no script for algorithm %q", store.ErrUnavailable, alg.Name())
	}
	params := s.boxedParams(alg)
	args := make([]any, 2, 2+len(params))
	args[0], args[1] = serverTime, cost
	if s.clientTime {
		args[0] = now.UnixMicro()
	}
	args = append(args, params...)
	reply, err := script.Run(ctx, s.client, []string{s.Key(key, alg)}, args...).Result()
	if err != nil {
		return algorithms.Result{}, s.failure(ctx, err)
	}
	res, err := parseReply(reply, alg.MaxCost())
	if err != nil {
		return algorithms.Result{}, err
	}
	return res, nil
}

// serverTime is ARGV[1] when the script reads Redis's TIME, boxed once.
var serverTime any = int64(-1)

// boxedParams returns alg.Args() as []any, cached for ratewise's own
// algorithm types. Other implementations are boxed on every call: their
// values need not be comparable, and a map key that is not would panic.
func (s *Store) boxedParams(alg algorithms.Algorithm) []any {
	cacheable := false
	switch alg.(type) {
	case algorithms.FixedWindow, algorithms.SlidingLog, algorithms.SlidingWindow,
		algorithms.TokenBucket, algorithms.GCRA:
		cacheable = true
	}
	if cacheable {
		if v, ok := s.params.Load(alg); ok {
			return v.([]any)
		}
	}
	args := alg.Args()
	boxed := make([]any, len(args))
	for i, a := range args {
		boxed[i] = a
	}
	if cacheable && s.paramsCount.Load() < maxCachedParams {
		if _, loaded := s.params.LoadOrStore(alg, boxed); !loaded {
			s.paramsCount.Add(1)
		}
	}
	return boxed
}

// Reset deletes alg's state for key.
func (s *Store) Reset(ctx context.Context, key string, alg algorithms.Algorithm) error {
	if err := resetScript.Run(ctx, s.client, []string{s.Key(key, alg)}).Err(); err != nil {
		return s.failure(ctx, err)
	}
	return nil
}

// TTL returns the key's remaining time to live in Redis. It runs on Redis's
// clock and ignores now.
func (s *Store) TTL(ctx context.Context, key string, alg algorithms.Algorithm, _ time.Time) (time.Duration, error) {
	ms, err := ttlScript.Run(ctx, s.client, []string{s.Key(key, alg)}).Int64()
	if err != nil {
		return 0, s.failure(ctx, err)
	}
	switch {
	case ms == -2: // no key
		return 0, nil
	case ms < 0: // a key without expiry: a contract violation, reported as forever
		return time.Duration(1<<63 - 1), nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// failure classifies an error from Redis: the context's own error when it
// ended (a deadline or cancellation), ErrUnavailable otherwise. Both keep the
// underlying error.
func (s *Store) failure(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("storeredis: %w: %w", ctxErr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
