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
// as "ratewise:gcra:1s:{alice}", so each key is its own Redis Cluster hash
// tag, and limiters with different windows or periods keep separate state.
// Every write sets a TTL of the decision's ResetAfter, rounded up to the
// millisecond (plus ClientTimeGrace in client-time mode), so idle keys vanish
// on their own.
package storeredis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/coalesce"
	"github.com/ratewise/ratewise/storeredis/internal/denycache"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

var (
	_ store.Store            = (*Store)(nil)
	_ store.AlgorithmChecker = (*Store)(nil)
	_ store.SetDecider       = (*Store)(nil)
	_ store.Reserver         = (*Store)(nil)
)

// DefaultKeyPrefix starts every key the store writes.
const DefaultKeyPrefix = "ratewise:"

// Client is what the store needs from go-redis: scripting. *redis.Client,
// *redis.ClusterClient, *redis.Ring and Sentinel failover clients all
// implement it.
type Client = redis.Scripter

// Store is the Redis store. It is safe for concurrent use.
type Store struct {
	client     Client
	prefix     string
	clientTime bool
	coalesce   int                       // WithCoalescing's n
	co         *coalesce.Coalescer[call] // nil when decisions are not coalesced
	denyCache  int                       // WithDenyCache's n
	deny       *denycache.Cache          // nil when off
	warnBudget time.Duration
	warnSet    bool        // WithWarnings was given
	warn       func(error) // WithWarnings's hook, or nil
	resends    bool        // whether go-redis may send a command twice (see resends)
	ids        *idMaker    // the store's request IDs, nil unless it resends
	horizon    int64       // µs: how long go-redis may resend a command (resendHorizon)
	replicas   replicaWait // WithReplicas's; its n is 0 when off
}

// Option configures a Store.
type Option interface {
	apply(*Store)
}

type optionFunc func(*Store)

func (f optionFunc) apply(s *Store) { f(s) }

// WithKeyPrefix replaces DefaultKeyPrefix. With WithKeyPrefix("rl:"), the key "alice"
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
// Clock) instead of Redis's TIME. Tests use it to drive time; it also suits
// deployments whose app servers keep their clocks in sync and want the
// decision to follow them. Clocks that disagree then disagree on windows.
// It is also the answer where scripts cannot read TIME, as on some managed
// and serverless Redis offerings (redisprobe.Run reports it).
//
// A clock reading taken before a call waits for a connection can reach Redis
// after a key it should still see has expired on Redis's clock, so in this
// mode keys live ClientTimeGrace longer than their state counts.
func WithClientTime() Option {
	return optionFunc(func(s *Store) { s.clientTime = true })
}

// ClientTimeGrace is how much longer than its ResetAfter a key lives in
// client-time mode (see WithClientTime).
const ClientTimeGrace = time.Second

// New returns a store on client.
func New(client Client, opts ...Option) *Store {
	s := &Store{client: client, prefix: DefaultKeyPrefix, coalesce: DefaultCoalescing, denyCache: DefaultDenyCache}
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
	if s.denyCache > 0 {
		s.deny = denycache.New(s.denyCache)
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

// CheckAlgorithm returns an error wrapping store.ErrUnsupported if the store
// has no Lua step for alg's Kind, or alg is not of the Kind's own type (see
// algo.CheckKind).
func (s *Store) CheckAlgorithm(alg algorithms.Algorithm) error {
	_, err := scriptFor(alg)
	return err
}

func scriptFor(alg algorithms.Algorithm) (*redis.Script, error) {
	if err := algo.CheckKind(alg); err != nil {
		return nil, fmt.Errorf("%w: %w", store.ErrUnsupported, err)
	}
	return scripts.Decide(alg.Kind())
}

// Decide runs alg's script for key in one round trip, which it may share
// with concurrent decisions (see WithCoalescing), or denies at once a
// request that a recent denial still covers (see WithDenyCache).
func (s *Store) Decide(ctx context.Context, k store.Key, alg algorithms.Algorithm, now time.Time, cost int64) (algorithms.Result, error) {
	key := k.String()
	sc, err := scriptFor(alg)
	if err != nil {
		return algorithms.Result{}, err
	}
	if err := algo.CheckDecision(alg, s.checkTime(now), cost); err != nil {
		return algorithms.Result{}, err
	}
	id, given := store.RequestID(ctx)
	if given {
		if err := storecheck.RequestID(ctx); err != nil {
			return algorithms.Result{}, err
		}
	}
	// A request with the caller's ID may be a retry of an admission, which
	// it must get back: a cached denial does not answer it.
	var buf [keyBuf]byte
	b := s.appendKey(buf[:0], key, alg)
	if s.deny == nil || cost <= 0 || given {
		at, notBefore, _ := s.clock(now)
		return s.decide(ctx, sc, string(b), id, given, alg, at, notBefore, cost)
	}
	t := s.denyClock(now)
	if cost == 1 {
		if res, ok := s.deny.Deny(b, alg, t); ok {
			if err := ctx.Err(); err != nil {
				return algorithms.Result{}, err
			}
			return res, nil
		}
	}
	rkey := string(b)
	gen := s.deny.Generation(rkey)
	at, notBefore, _ := s.clock(now)
	res, err := s.decide(ctx, sc, rkey, "", false, alg, at, notBefore, cost)
	if err == nil {
		s.deny.Remember(rkey, alg, res, cost, t, s.clientTime, gen)
	}
	return res, err
}

// decide sends one decision to Redis, alone or coalesced, with a once key
// if it charges and carries the caller's request ID id (if given, already
// checked) or one of the store's.
func (s *Store) decide(ctx context.Context, sc *redis.Script, rkey, id string, given bool, alg algorithms.Algorithm, at any, notBefore, cost int64) (algorithms.Result, error) {
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err // not sent
	}
	once := s.idFor(id, given, cost > 0).key(rkey, onceDecide)
	if once != "" {
		// The first outcome, which a retry returns, was decided earlier.
		notBefore = 0
	}
	// A charge with the caller's ID may be retried under a changed limit,
	// whose reply only decide.lua carries: it goes alone. The store's own
	// IDs are only ever resent as they were, so their batches need no
	// limit.
	if s.co != nil && !(given && once != "") {
		deadline, _ := ctx.Deadline()
		t, queued := s.co.Join(call{key: rkey, once: once, alg: alg, at: at, notBefore: notBefore, cost: cost}, deadline)
		if !queued {
			defer s.co.Sent()
		} else {
			c, err := t.Wait(ctx)
			if err != nil {
				return algorithms.Result{}, s.decisionFailure(ctx, err)
			}
			return s.outcome(ctx, &c)
		}
	}
	if once == "" {
		args := appendParams(append(make([]any, 0, 6), at, cost), alg)
		reply, err := s.run(ctx, sc, []string{rkey}, args...)
		if err != nil {
			return algorithms.Result{}, err
		}
		res, err := parseReply(reply, algo.MaxCost(alg), notBefore)
		return algo.Charge(res, alg, cost), err
	}
	args := append(appendOnceParams(append(make([]any, 0, 8), at, cost), alg), algo.MaxCost(alg), s.horizon)
	reply, err := s.run(ctx, sc, []string{rkey, once}, args...)
	if err != nil {
		return algorithms.Result{}, err
	}
	return parseOnce(reply, alg, notBefore)
}

// parseOnce parses the reply of a decision with a once key: its five
// fields, the limit, and what the admission charged (see chargeOf).
func parseOnce(reply any, alg algorithms.Algorithm, notBefore int64) (algorithms.Result, error) {
	fields, ok := reply.([]any)
	if !ok || len(fields) != 9 {
		return algorithms.Result{}, fmt.Errorf("%w: %w: want 9 integers (reply %v)", store.ErrUnavailable, ErrMalformedReply, reply)
	}
	limit, err := limitOf(fields[5], reply)
	if err != nil {
		return algorithms.Result{}, err
	}
	res, err := parseFields(fields[:5], limit, notBefore)
	if err != nil {
		return algorithms.Result{}, err
	}
	return chargeOf(res, alg, fields[6:9])
}

// appendOnceParams appends alg's parameters as appendParams does, then an
// empty string for each a kind may take and alg's does not, to four: the
// layout of a request with a once key, whose limit follows them.
func appendOnceParams(args []any, alg algorithms.Algorithm) []any {
	n := len(args)
	args = appendParams(args, alg)
	for len(args) < n+4 {
		args = append(args, "")
	}
	return args
}

// appendParams appends the parameters alg's kind takes, in the order of
// algorithms.Params: limit, window in µs, then the burst and the
// sub-windows if the kind takes them.
func appendParams(args []any, alg algorithms.Algorithm) []any {
	p, k := algo.ParamsOf(alg), alg.Kind()
	args = append(args, p.Limit, p.Window.Microseconds())
	if algo.TakesBurst(k) {
		args = append(args, p.Burst)
	}
	if algo.TakesSubWindows(k) {
		args = append(args, p.SubWindows)
	}
	return args
}

// clock returns what a script is told of the time: ARGV[1]; the earliest
// time its reply may say it decided at; and the time the caller's inputs are
// checked at. In client-time mode all three are the caller's now. Otherwise
// Redis's clock decides: ARGV[1] is serverTime, and now, which is not used,
// is not checked (the Unix epoch stands in).
func (s *Store) clock(now time.Time) (arg any, notBefore int64, checkAt time.Time) {
	if s.clientTime {
		return now.UnixMicro(), now.UnixMicro(), now
	}
	return serverTime, 0, s.checkTime(now)
}

// checkTime is clock's checkAt alone, which boxes nothing: Decide checks
// its input before it knows whether the deny cache answers.
func (s *Store) checkTime(now time.Time) time.Time {
	if s.clientTime {
		return now
	}
	return time.Unix(0, 0)
}

// DecideSet decides cost for key under every algorithm of algs, all or
// nothing, with one script in one round trip (see store.SetDecider). The
// algorithms' keys share key's hash tag, so on Redis Cluster they live in
// one slot and one script can reach them all.
func (s *Store) DecideSet(ctx context.Context, k store.Key, algs []algorithms.Algorithm, now time.Time, cost int64) ([]algorithms.Result, error) {
	key := k.String()
	for _, alg := range algs {
		if _, err := scriptFor(alg); err != nil {
			return nil, err
		}
	}
	at, notBefore, checkAt := s.clock(now)
	if err := storecheck.Set(algs, checkAt, cost); err != nil {
		return nil, err
	}
	// The script of the set's kinds, each once, in order of first use.
	var kinds []*algorithms.Kind
	index := map[*algorithms.Kind]int{}
	for _, alg := range algs {
		if _, ok := index[alg.Kind()]; !ok {
			kinds = append(kinds, alg.Kind())
			index[alg.Kind()] = len(kinds)
		}
	}
	sc, err := scripts.Set(kinds)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(algs), len(algs)+1)
	rid, err := s.requestID(ctx, cost > 0)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 3+7*len(algs))
	args = append(args, at, cost, s.horizon)
	for i, alg := range algs {
		keys[i] = s.Key(key, alg)
		// The kind's index in the script, then how many values follow:
		// its parameters, or with a once key four and its limit.
		n := len(args)
		if rid.id == "" {
			args = appendParams(append(args, index[alg.Kind()], 0), alg)
		} else {
			args = append(appendOnceParams(append(args, index[alg.Kind()], 0), alg), algo.MaxCost(alg))
		}
		args[n+1] = len(args) - n - 2
	}
	once := rid.key(keys[0], onceSet)
	if once != "" {
		keys, notBefore = append(keys, once), 0
	}
	if rid.caller {
		// Each other limit's state knows the admission too, so that a
		// refund of it with the caller's ID forgets it (see
		// internal/scripts/refund.lua); a store-made ID names no refund.
		for _, k := range keys[1:len(algs)] {
			keys = append(keys, rid.key(k, onceSet))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // not sent
	}
	defer s.forget(keys[:len(algs)]...)
	reply, err := s.run(ctx, sc, keys, args...)
	if err != nil {
		return nil, err
	}
	n := len(algs)
	want := 5 * n
	if once != "" {
		want += 3*n + 1 // each limit's limit and parameters, then the cost
	}
	fields, ok := reply.([]any)
	if !ok || len(fields) != want {
		return nil, fmt.Errorf("%w: %w: want %d integers (reply %v)", store.ErrUnavailable, ErrMalformedReply, want, reply)
	}
	results := make([]algorithms.Result, n)
	all := true
	for i, alg := range algs {
		limit := algo.MaxCost(alg)
		if once != "" {
			if limit, err = limitOf(fields[5*n+3*i], reply); err != nil {
				return nil, err
			}
		}
		if results[i], err = parseFields(fields[5*i:5*i+5], limit, notBefore); err != nil {
			return nil, err
		}
		all = all && results[i].Allowed
	}
	if !all {
		return results, nil // the set charged nothing
	}
	for i, alg := range algs {
		if once == "" {
			results[i] = algo.Charge(results[i], alg, cost)
		} else if results[i], err = chargeOf(results[i], alg, []any{fields[5*n+3*i+1], fields[5*n+3*i+2], fields[want-1]}); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// Refund gives back n units that a request admitted at time at was
// charged, in one round trip (see store.Refunder).
func (s *Store) Refund(ctx context.Context, k store.Key, alg algorithms.Algorithm, now, at time.Time, n int64) (algorithms.Result, error) {
	key := k.String()
	if _, err := scriptFor(alg); err != nil {
		return algorithms.Result{}, err
	}
	arg, notBefore, checkAt := s.clock(now)
	if err := algo.CheckRefund(alg, checkAt, at, n); err != nil {
		return algorithms.Result{}, err
	}
	sc, err := scripts.Refund(alg.Kind())
	if err != nil {
		return algorithms.Result{}, err
	}
	keys := []string{s.Key(key, alg)}
	rid, err := s.requestID(ctx, true)
	if err != nil {
		return algorithms.Result{}, err
	}
	if rid.id != "" {
		keys, notBefore = append(keys, rid.key(keys[0], onceRefund)), 0
		if rid.caller {
			// The admission it gives back, if made with the same ID: a
			// decision or booking, or a set's.
			keys = append(keys, rid.key(keys[0], onceDecide), rid.key(keys[0], onceSet))
		}
	}
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, err // not sent
	}
	defer s.forget(keys[0])
	if rid.id == "" {
		args := appendParams(append(make([]any, 0, 7), arg, n, at.UnixMicro()), alg)
		reply, err := s.run(ctx, sc, keys, args...)
		if err != nil {
			return algorithms.Result{}, err
		}
		return parseReply(reply, algo.MaxCost(alg), notBefore)
	}
	args := append(appendOnceParams(append(make([]any, 0, 10), arg, n, at.UnixMicro()), alg), algo.MaxCost(alg), s.horizon, int64(algo.QuotaOf(alg).Window/time.Microsecond))
	reply, err := s.run(ctx, sc, keys, args...)
	if err != nil {
		return algorithms.Result{}, err
	}
	// An inspection's fields and the limit (see internal/scripts/refund.lua).
	fields, ok := reply.([]any)
	if !ok || len(fields) != 6 {
		return algorithms.Result{}, fmt.Errorf("%w: %w: want 6 integers (reply %v)", store.ErrUnavailable, ErrMalformedReply, reply)
	}
	limit, err := limitOf(fields[5], reply)
	if err != nil {
		return algorithms.Result{}, err
	}
	return parseFields(fields[:5], limit, notBefore)
}

// Reserve books a request for key under alg, in one round trip (see
// store.Reserver): the token bucket and GCRA.
func (s *Store) Reserve(ctx context.Context, k store.Key, alg algorithms.Algorithm, now time.Time, cost int64, maxWait time.Duration) (algorithms.Result, time.Duration, error) {
	key := k.String()
	if _, err := scriptFor(alg); err != nil {
		return algorithms.Result{}, 0, err
	}
	at, notBefore, checkAt := s.clock(now)
	if err := storecheck.Reserve(alg, checkAt, cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	sc, err := scripts.Reserve(alg.Kind())
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	keys := []string{s.Key(key, alg)}
	rid, err := s.requestID(ctx, true)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	once := rid.key(keys[0], onceDecide)
	if once != "" {
		keys, notBefore = append(keys, once), 0
	}
	if err := ctx.Err(); err != nil {
		return algorithms.Result{}, 0, err // not sent
	}
	defer s.forget(keys[0])
	args := append(appendParams(append(make([]any, 0, 7), at, cost), alg), maxWait.Microseconds())
	limit, want := algo.MaxCost(alg), 6
	if once != "" {
		args, want = append(args, limit, s.horizon), 10
	}
	reply, err := s.run(ctx, sc, keys, args...)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	fields, ok := reply.([]any)
	if !ok || len(fields) != want {
		return algorithms.Result{}, 0, fmt.Errorf("%w: %w: want %d integers (reply %v)", store.ErrUnavailable, ErrMalformedReply, want, reply)
	}
	delay, ok := fields[5].(int64)
	if !ok || delay < 0 || delay > 1<<52 {
		return algorithms.Result{}, 0, fmt.Errorf("%w: %w: delay %v (reply %v)", store.ErrUnavailable, ErrMalformedReply, fields[5], reply)
	}
	if once != "" {
		if limit, err = limitOf(fields[6], reply); err != nil {
			return algorithms.Result{}, 0, err
		}
	}
	res, err := parseReply(fields[:5], limit, notBefore)
	if err != nil {
		return algorithms.Result{}, 0, err
	}
	if once == "" {
		res = algo.Charge(res, alg, cost)
	} else if res, err = chargeOf(res, alg, fields[7:10]); err != nil {
		return algorithms.Result{}, 0, err
	}
	return res, time.Duration(delay) * time.Microsecond, nil
}

// serverTime is ARGV[1] when the script reads Redis's TIME: a string no
// number formats to, boxed once.
var serverTime any = ""

// Reset deletes alg's state for key. The memory of a large sorted set is
// freed in the background (UNLINK), so even a key of millions of records does
// not block Redis. A reset with a request ID, the caller's or, with a client
// that resends, the store's, is applied once: sent again, it does not delete
// what was charged after it.
func (s *Store) Reset(ctx context.Context, k store.Key, alg algorithms.Algorithm) error {
	key := k.String()
	if _, err := scriptFor(alg); err != nil {
		return err
	}
	if err := alg.Validate(); err != nil {
		return err
	}
	rid, err := s.requestID(ctx, true)
	if err != nil {
		return err
	}
	keys := []string{s.Key(key, alg)}
	if rid.id != "" {
		keys = append(keys, rid.key(keys[0], onceReset))
	}
	defer s.forget(keys[0])
	if _, err := s.run(ctx, scripts.Reset, keys, (s.horizon+999)/1000); err != nil {
		return err
	}
	return nil
}

// TTL returns the key's remaining time to live in Redis. It runs on Redis's
// clock and ignores now.
func (s *Store) TTL(ctx context.Context, k store.Key, alg algorithms.Algorithm, _ time.Time) (time.Duration, error) {
	key := k.String()
	if _, err := scriptFor(alg); err != nil {
		return 0, err
	}
	ms, err := scripts.TTL.Run(ctx, s.client, []string{s.Key(key, alg)}).Int64()
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

// failure classifies an error from Redis: the caller's context error when
// ctx has ended (a deadline or cancellation), ErrUnavailable otherwise. A
// timeout of the client's own, such as a dial or read timeout, is not the
// caller's deadline: it is ErrUnavailable, and the timeout is kept only as
// text, so errors.Is(err, context.DeadlineExceeded) stays false for it. An
// error at or after ctx's deadline is the caller's deadline, even before
// ctx reports it.
func (s *Store) failure(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if deadline, ok := ctx.Deadline(); ok && ctxErr == nil && !time.Now().Before(deadline) {
		// With ContextTimeoutEnabled the socket's deadline is the
		// context's, and it can fire a moment before the context's own
		// timer marks the context done: the caller's deadline all the same.
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return err
		}
		return fmt.Errorf("storeredis: %w: %w", ctxErr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}
