// Package contract is ratewise's store conformance suite: one exported entry
// point, Run, that checks any store.Store against the contract documented in
// package store, for every algorithm. Every store of this module runs it, as
// does any wrapper of one (a store that instruments or routes the calls it
// passes on):
//
//	func TestContract(t *testing.T) {
//		contract.Run(t, func(t *testing.T) store.Store { return mystore.New(t) })
//	}
//
// Each rule is its own named subtest, and every failure message names the
// rule it broke. Time comes from a ratewisetest.Clock passed to the limiter, so a
// store must decide with the now it is given (a Redis store in client-time
// mode, for example); the suite never sleeps. A store that decides on its own
// clock runs the rules that hold at any time, with the StoreClock option.
package contract

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/lease"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
)

// rule is one clause of the store contract, checked for one algorithm.
type rule struct {
	name string // subtest name
	text string // the rule, quoted in failure messages
	run  func(e *env)
	// anyTime: the rule holds whatever the time, so it also runs on a
	// store that decides on its own clock (see StoreClock).
	anyTime bool
}

// Option adjusts how Run checks a store.
type Option interface {
	apply(*config)
}

type config struct {
	storeClock bool
	grace      time.Duration
	sampled    bool
	leased     bool
	coalesced  bool
	expiry     expiryAdvancer
	lostFails  bool
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// StoreClock tells Run that the store decides on a clock of its own and
// ignores the now it is given, as the Redis store does by default. Run then
// checks only the rules that hold whatever the time, with windows and
// periods of 30 days, so that the real time that passes while a rule runs
// changes nothing it checks.
func StoreClock() Option { return optionFunc(func(c *config) { c.storeClock = true }) }

// Coalesced tells Run that the store shares round trips between
// concurrent decisions (as the Redis and PostgreSQL stores do by default,
// storeredis.WithCoalescing) and counts them (Batches, see Run): the
// model checker and the poisoned_batch rule then require batches to have
// formed, and poisoned_batch requires the store to have Poison.
func Coalesced() Option { return optionFunc(func(c *config) { c.coalesced = true }) }

// LostRepliesFail tells Run that a call whose reply the store loses
// (LoseNextReply, see Run) fails, with store.ErrMaybeDecided, as pgx's do, where
// go-redis sends the command again and the caller sees nothing. Such a
// call's outcome is unknown, and its effect depends on its order among
// steps made at once, which the model checker could not tell from what it
// sees after the round: it loses only the replies of steps made alone.
func LostRepliesFail() Option { return optionFunc(func(c *config) { c.lostFails = true }) }

// ExpiryFollows tells Run that the store's expiry follows c, the clock
// the store was given for it (storememory.WithClock): the model checker
// moves c on over its idle gaps. A store under test with an AdvanceExpiry
// method of its own (see Run) needs no option.
func ExpiryFollows(c interface{ AdvanceExpiry(d time.Duration) }) Option {
	return optionFunc(func(cfg *config) { cfg.expiry = c })
}

// batcher is a store that shares round trips between concurrent
// decisions, and counts them: storeredis.Store and storepostgres.Store.
type batcher interface {
	// Batches returns how many shared round trips the store has sent, and
	// how many decisions they carried.
	Batches() (batches, decisions int64)
}

// poisoner is a store under test that can make the decisions on one key
// fail, as a foreign value at the key or a row another transaction holds
// does, so that the poisoned_batch rule can check that such a decision,
// sharing a round trip with others, fails alone. The suite's Coalesced
// targets implement it.
type poisoner interface {
	// Poison makes every decision of alg on key fail, at once or by its
	// caller's deadline, until heal is called.
	Poison(t *testing.T, key store.Key, alg algorithms.Algorithm) (heal func())
}

// ExpiryGrace tells Run that the store keeps a key's state up to d longer
// than its ResetAfter, as the Redis store does in client-time mode so that
// late clock readings still see it. The state_expiry rule allows for it.
func ExpiryGrace(d time.Duration) Option { return optionFunc(func(c *config) { c.grace = d }) }

// Sampled tells Run that the store runs code that another target checks in
// full, on a slower engine, such as the Redis store's scripts on miniredis,
// whose Lua interpreter runs them many times slower under the race
// detector, the leasing layer over a server, which the leased memory
// store checks in full, or a store's path off its defaults. Every rule still runs, on a sample of the heaviest
// work: the model checker runs 80 sequences per algorithm instead of 250
// (50 instead of 150 under Leased; all multiplied by
// RATEWISE_MODEL_SOAK), matches_model 1,000 random steps
// instead of 3,000, and real_quotas skips the quotas that fill a log of one
// record per unit with over 100,000 records.
func Sampled() Option { return optionFunc(func(c *config) { c.sampled = true }) }

// Leased tells Run to check the store under the leasing layer (package
// lease): newStore returns the store that leases book and refund on (a
// store.Store.Lease and a store.Store.Refund), and
// every rule runs on it wrapped for one instance, so that a hot key's
// decisions of cost 1 are made from that instance's lease, with the lease's
// view of the key. The model_check rule wraps it for three instances
// sharing it, drives them with sequences of every operation, and checks
// bounds instead of equality with the reference store (see
// leasedModelCheck). stale_time and leases are skipped, with the reasons
// in leasedSkips; every other rule holds as written.
func Leased() Option { return optionFunc(func(c *config) { c.leased = true }) }

// leasedSkips are the rules a leasing layer departs from by design
// (internal/lease/design.md section 7), and why.
var leasedSkips = map[string]string{
	"stale_time": "a request behind the key's latest is decided at this instance's latest on the key, which may " +
		"be behind the store's (others' peeks and decisions), so a local denial may come where the store " +
		"would admit",
	"leases": "a leasing layer books leases for its own decisions from the store it wraps, and books none " +
		"for a layer above it (store.ErrUnsupported)",
}

// Run checks the store returned by newStore against every rule for every
// algorithm, each as a subtest named algorithm/rule. newStore is called
// once per rule and algorithm; it may return the same store every time,
// since the suite gives every subtest keys of its own, and it should
// register cleanup with t.Cleanup.
//
// The store under test may also be a harness that lets the suite reach
// into it, with any of these methods, which Run finds by type assertion:
//
//   - Batches() (batches, decisions int64): how many shared round trips the
//     store has sent and how many decisions they carried, as the Redis and
//     PostgreSQL stores report them. A Coalesced store must have it.
//   - Poison(t *testing.T, key store.Key, alg algorithms.Algorithm) (heal
//     func()): makes every decision of alg on key fail, at once or by its
//     caller's deadline, until heal is called, as a foreign value at the
//     key or a row another transaction holds does, so that the
//     poisoned_batch rule checks that such a decision, sharing a round
//     trip with others, fails alone. A Coalesced store must have it.
//   - LoseNextReply() and KeepReplies() bool: the first loses the reply to
//     the next command the store sends; the second disarms it if no
//     command was sent since, and reports whether a reply was lost. The
//     model checker then loses replies and checks what the store does.
//   - AdvanceExpiry(d time.Duration): moves on by d the clock the store's
//     expiry follows (a memory store's own clock, a miniredis the test
//     steps), as ExpiryFollows's clock does.
//   - TTL(ctx context.Context, key store.Key, alg algorithms.Algorithm, now
//     time.Time) (time.Duration, error): how long the store keeps alg's
//     state for key, as the memory and PostgreSQL stores report it; rules
//     that bound a state's life check it.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, opts ...Option) {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o.apply(&cfg)
	}
	cs := cases
	if cfg.storeClock {
		cs = withWindow(cases, 30*24*time.Hour)
	}
	for _, c := range cs {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range rules {
				if cfg.storeClock && !r.anyTime {
					continue
				}
				t.Run(r.name, func(t *testing.T) {
					if why, ok := leasedSkips[r.name]; ok && cfg.leased {
						t.Skip("leased store: " + why)
					}
					st := newStore(t)
					e := &env{t: t, rule: r, c: c, cases: cs, store: st, inner: st, clock: ratewisetest.NewClock(c.start), cfg: cfg}
					if cfg.leased {
						e.store = leaseFor(t, st, lease.Policy{Instances: 1})
					}
					r.run(e)
				})
			}
		})
	}
}

// env is what a rule runs with: a fresh clock at the case's start time and
// the store under test.
type env struct {
	t     *testing.T
	rule  rule
	c     algCase
	cases []algCase // every algorithm, as this run builds them
	store store.Store
	// inner is the store newStore returned: store itself, or under
	// Leased the store the leasing layer wraps.
	inner store.Store
	clock *ratewisetest.Clock
	n     int // limiters made, for unique prefixes
	cfg   config
}

// runID keeps keys from different runs apart on a store that outlives them.
var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// lim is a limiter under test with its namespace, and the prefix that puts
// before keys in the store.
type lim struct {
	*ratewise.Limiter
	namespace, prefix string
}

// limiter returns a limiter for alg on the store under test whose keys belong
// to this subtest alone, on the suite's clock.
func (e *env) limiter(alg algorithms.Algorithm) lim {
	e.t.Helper()
	return e.limiterOn(alg, e.clock)
}

// limiterOn is limiter with its own clock and options.
func (e *env) limiterOn(alg algorithms.Algorithm, clock interface{ Now() time.Time }, opts ...ratewise.Option) lim {
	e.t.Helper()
	e.n++
	namespace := strings.ReplaceAll(fmt.Sprintf("contract.%s.%s.%d", runID, e.t.Name(), e.n), ":", ".")
	return e.limiterIn(alg, clock, namespace, opts...)
}

// limiterIn returns a limiter for alg in a namespace of the caller's, to
// share keys with another limiter.
func (e *env) limiterIn(
	alg algorithms.Algorithm,
	clock interface{ Now() time.Time },
	namespace string,
	opts ...ratewise.Option,
) lim {
	e.t.Helper()
	l, err := ratewise.New(
		e.store,
		alg,
		append([]ratewise.Option{ratewise.WithClock(clock), ratewise.WithNamespace(namespace)}, opts...)...)
	if err != nil {
		e.t.Fatalf("contract: building the limiter for %#v: %v", alg, err)
	}
	return lim{l, namespace, namespace + ":"}
}

// fatalf fails the subtest with a message that names the rule.
func (e *env) fatalf(format string, args ...any) {
	e.t.Helper()
	e.t.Fatalf(
		"contract rule %q (%s) broken for %s: %s",
		e.rule.name,
		e.rule.text,
		e.c.name,
		fmt.Sprintf(format, args...),
	)
}

// allowN calls l.AllowN and fails on error.
func (e *env) allowN(l lim, key string, n int64) ratewise.Result {
	e.t.Helper()
	res, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		e.fatalf("AllowN(%q, %d) at %s: unexpected error: %v", key, n, e.at(), err)
	}
	return res
}

func (e *env) allow(l lim, key string) ratewise.Result {
	e.t.Helper()
	return e.allowN(l, key, 1)
}

// peek calls l.Peek and fails on error.
func (e *env) peek(l lim, key string) ratewise.Result {
	e.t.Helper()
	res, err := l.PeekN(context.Background(), key, 1)
	if err != nil {
		e.fatalf("Peek(%q) at %s: unexpected error: %v", key, e.at(), err)
	}
	return res
}

// exhaust sends Limit requests of cost 1, which must all be admitted.
func (e *env) exhaust(l lim, key string) {
	e.t.Helper()
	for i := range e.c.limit {
		if res := e.allow(l, key); !res.Allowed {
			e.fatalf("request %d of %d on a fresh key at one instant was denied: %+v", i+1, e.c.limit, res)
		}
	}
}

// count sends cost-1 requests until one is denied and returns how many were
// admitted.
func (e *env) count(l lim, key string) int64 {
	e.t.Helper()
	var n int64
	for ; n <= 4*e.c.limit; n++ {
		if !e.allow(l, key).Allowed {
			return n
		}
	}
	e.fatalf("more than %d requests admitted at one instant with limit %d", 4*e.c.limit, e.c.limit)
	return n
}

// at is the clock's offset from the case's start, for messages.
func (e *env) at() string {
	return "start+" + e.clock.Now().Sub(e.c.start).String()
}

// ttlReporter is a store that can report how long it will keep a key's
// state. The suite checks with it, on the stores that offer it, that state
// is kept as long as it counts and no longer than that plus the store's
// grace.
type ttlReporter interface {
	// TTL returns how long after now the store keeps alg's state for key, or
	// 0 if it holds none. A store whose expiry runs on its own clock may
	// ignore now and round up to its clock's resolution.
	TTL(ctx context.Context, key store.Key, alg algorithms.Algorithm, now time.Time) (time.Duration, error)
}

// leaseFor wraps s in the leasing layer under p, and gives back what its
// leases hold when the test ends.
func leaseFor(t *testing.T, s store.Store, p lease.Policy) *lease.Store {
	t.Helper()
	w, err := lease.Wrap(s, p)
	if err != nil {
		t.Fatalf("contract: lease.Wrap(%T, %+v): %v", s, p, err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w
}
