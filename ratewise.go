// Package ratewise limits how often each key (a user, an IP, an API path or a
// composite of them) may do something, with the algorithm that fits the
// workload and the store that fits the deployment.
//
// A Limiter combines a store (storememory for tests and single processes,
// storeredis for many app instances sharing one limit) with an algorithm from
// package algorithms. Every call returns a Result; being limited is
// Result.Allowed == false, never an error. An error means the input was
// invalid or the store failed, and must not be treated as allowed.
package ratewise

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// Result is the outcome of one decision; see algorithms.Result for the exact
// meaning of every field.
type Result = algorithms.Result

// Limiter limits events per key. It is safe for simultaneous use by many
// goroutines. Limiters that share a store share state when they use the same
// algorithm with the same window or period (its scope) and the
// same key in the same namespace: a per-second and a per-hour limit on one
// key are independent, while two limiters that differ only in their limit
// count against one quota. Give limiters their own namespace (WithNamespace)
// unless that is what you want.
//
// Most callers want Allow. AllowN weighs a request, PeekN looks without
// consuming, and Reset forgets a key.
type Limiter struct {
	store store.Store
	alg   algorithms.Algorithm
	// namespace goes with every key to the store (store.Key), "" for none.
	namespace string
	clock     interface{ Now() time.Time }
	// limits chooses a key's algorithm; nil means alg for every key.
	limits func(ctx context.Context, key string) (algorithms.Algorithm, error)
	// observer hears of every decision; nil for none, the default, which
	// costs nothing on the hot path.
	observer func(context.Context, DecisionEvent)
	// latency is the longest recent booking round trip (see waitBooked).
	latency latency
	// systemTime is whether the limiter reads the system clock, which
	// it then leaves to the store, to read once (store.Store's zero now).
	systemTime bool
	// maxCost is alg's largest cost (algo.MaxCost), checked without a call.
	maxCost int64
	// lastTier is the algorithm the tier function returned last that
	// passed checkAlgorithm, so that a tier need not be checked again on
	// every call; nil for none.
	lastTier atomic.Pointer[algorithms.Algorithm]
}

// New returns a limiter that runs alg on s. It fails with ErrInvalidConfig
// for a nil store or an invalid namespace (WithNamespace), and with
// algorithms.ErrInvalidAlgorithm for a nil alg, a type that only embeds one
// of package algorithms' types, or parameters alg.Validate rejects.
func New(s store.Store, alg algorithms.Algorithm, opts ...Option) (*Limiter, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: the store is nil", ErrInvalidConfig)
	}
	if alg == nil {
		return nil, errNilAlgorithm
	}
	if err := algo.CheckKind(alg); err != nil {
		return nil, err
	}
	if err := alg.Validate(); err != nil {
		return nil, err
	}
	l := &Limiter{store: s, alg: alg, clock: systemClock{}}
	for _, o := range opts {
		o.apply(l)
	}
	if strings.Contains(l.namespace, ":") {
		return nil, fmt.Errorf(`%w: a namespace must not contain ":", got %q`, ErrInvalidConfig, l.namespace)
	}
	l.maxCost = algo.MaxCost(alg)
	_, l.systemTime = l.clock.(systemClock)
	return l, nil
}

// Allow is shorthand for AllowN(ctx, key, 1).
func (l *Limiter) Allow(ctx context.Context, key string) (Result, error) {
	return l.AllowN(ctx, key, 1)
}

// AllowN reports whether a request of cost n for key is admitted now, and
// consumes n if it is. A denied request consumes nothing. n must be in
// [1, the key's limit]: a larger n could never be admitted and fails with
// algorithms.ErrCostExceedsLimit.
func (l *Limiter) AllowN(ctx context.Context, key string, n int64) (Result, error) {
	if l.limits == nil && n >= 1 && n <= l.maxCost {
		return l.decideObserved(ctx, key, l.alg, n) // New checked alg, and so n
	}
	alg, err := l.checkedAlgorithmFor(ctx, key)
	if err != nil {
		return Result{}, err
	}
	return l.allow(ctx, key, alg, n)
}

// AllowWith is AllowN with an algorithm, and so a limit, chosen by the
// caller for this call alone, such as the plan of the user making it. The
// key keeps what it used across calls whose algorithms share a kind and
// Scope: 100 and 10,000 per hour count against one history, while a limit
// per minute and one per hour are separate (see "Changing limits" in package algorithms). alg is
// checked on every call, with the errors New returns.
func (l *Limiter) AllowWith(ctx context.Context, key string, alg algorithms.Algorithm, n int64) (Result, error) {
	if err := checkAlgorithm(alg); err != nil {
		return Result{}, err
	}
	return l.allow(ctx, key, alg, n)
}

// allow decides a request of cost n under alg, which has been checked.
func (l *Limiter) allow(ctx context.Context, key string, alg algorithms.Algorithm, n int64) (Result, error) {
	if n < 1 || alg != l.alg || n > l.maxCost {
		if err := checkCost(alg, n); err != nil {
			return Result{}, err
		}
	}
	return l.decideObserved(ctx, key, alg, n)
}

// checkCost checks a request's cost: at least 1, at most alg's limit.
func checkCost(alg algorithms.Algorithm, n int64) error {
	if n <= 0 {
		return fmt.Errorf("%w: cost must be > 0, got %d", algorithms.ErrInvalidCost, n)
	}
	return algo.CheckCost(alg, n)
}

// PeekN reports key's state without consuming anything: Allowed says
// whether a request of cost n would be admitted now, RetryAfter how long
// until it would be (as AllowN would answer it now), and Remaining what is
// available now. n must be in [1, the key's limit].
func (l *Limiter) PeekN(ctx context.Context, key string, n int64) (Result, error) {
	alg, err := l.checkedAlgorithmFor(ctx, key)
	if err != nil {
		return Result{}, err
	}
	if err := checkCost(alg, n); err != nil {
		return Result{}, err
	}
	return l.decideObserved(ctx, key, alg, -n) // a negative cost inspects (algo.Decide)
}

// Refund gives back n units of the cost an admission for key was charged:
// a request that failed before doing any work, or a job charged its largest
// cost up front that used less. charged is the Result of that admission
// (from AllowN, AllowWith, WaitN, a Reservation, or a Stack's Results), which
// names the state it charged: its algorithm's kind and window, with the
// limit it was decided under, its cost, and the time it counts at
// (Result.Charged, Result.At). The refund goes into exactly that state,
// whatever limit the key has now: after a tier change, to the limit it was
// charged under. Refund returns that state afterwards, as PeekN under the
// admission's algorithm reports it.
//
// A refund never lets more through than if the units had never been
// charged. Made at once, before time passes or another request for key is
// charged, it gives back exactly n (unless a bucket's rate count has
// changed more than once lately); later, what comes back depends on the
// algorithm and on what the key did since, and may be less (see "Refunds"
// in package algorithms): a token bucket or GCRA gives back less
// what has refilled since the charge, and nothing once the key has been
// written under another rate count, even if it has changed back; a sliding
// log frees its oldest units
// if others were recorded after the refunded ones; and a fixed window
// gives back nothing once its window has ended. Refund each admission at
// most once, and not after its key was Reset, which forgot the charge: a
// refund then would give back what later requests were charged (see
// "Refunds" in package algorithms).
//
// It fails with ErrNotAdmitted for a Result that charged nothing (a
// denial, a PeekN's, the zero Result), with algorithms.ErrInvalidCost for n
// outside [1, the admission's cost], and with store.ErrUnsupported on a
// store that cannot refund (store.Store.Refund; the memory, Redis and
// PostgreSQL stores can).
func (l *Limiter) Refund(ctx context.Context, key string, charged Result, n int64) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	alg, cost := charged.Charged()
	if alg == nil {
		return Result{}, ErrNotAdmitted
	}
	if n <= 0 || n > cost {
		return Result{}, fmt.Errorf(
			"%w: a refund must be in [1, %d], the cost the admission was charged, got %d",
			algorithms.ErrInvalidCost,
			cost,
			n,
		)
	}
	now, err := l.now()
	if err != nil {
		return Result{}, err
	}
	return l.store.Refund(ctx, l.key(key), alg, now, charged.At, n)
}

// Reset forgets key, which is then at full capacity under the algorithm
// AlgorithmFor chooses for it now.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if key == "" {
		return ErrEmptyKey
	}
	alg, err := l.AlgorithmFor(ctx, key)
	if err != nil {
		return err
	}
	return l.store.Reset(ctx, l.key(key), alg)
}

// Algorithm returns the limiter's algorithm: every key's, unless WithTiers
// chooses another (see AlgorithmFor).
func (l *Limiter) Algorithm() algorithms.Algorithm { return l.alg }

// AlgorithmFor returns the algorithm the limiter applies to key: what the
// WithTiers function chooses, or the limiter's own. An error from that
// function is returned wrapped.
func (l *Limiter) AlgorithmFor(ctx context.Context, key string) (algorithms.Algorithm, error) {
	if l.limits == nil {
		return l.alg, nil
	}
	alg, err := l.limits(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("ratewise: choosing the limit for a key: %w", err)
	}
	if alg == nil {
		return l.alg, nil
	}
	return alg, nil
}

// checkedAlgorithmFor is AlgorithmFor, with the algorithm checked unless it
// is the limiter's own, which New checked, or the one the tier function
// returned last time, if it passed.
func (l *Limiter) checkedAlgorithmFor(ctx context.Context, key string) (algorithms.Algorithm, error) {
	alg, err := l.AlgorithmFor(ctx, key)
	if err != nil || alg == l.alg {
		return alg, err
	}
	// A checked algorithm is one of package algorithms' types, all
	// comparable, and an algorithm of another type compares unequal
	// without its value being compared: this never panics.
	if last := l.lastTier.Load(); last != nil && *last == alg {
		return alg, nil
	}
	if err := checkAlgorithm(alg); err != nil {
		return nil, err
	}
	checked := alg // its own variable, so that alg stays off the heap
	l.lastTier.Store(&checked)
	return alg, nil
}

// checkAlgorithm checks an algorithm that New did not: one of package
// algorithms' types, with valid parameters.
func checkAlgorithm(alg algorithms.Algorithm) error {
	if alg == nil {
		return errNilAlgorithm
	}
	if err := algo.CheckKind(alg); err != nil {
		return err
	}
	return alg.Validate()
}

func (l *Limiter) decideObserved(
	ctx context.Context,
	key string,
	alg algorithms.Algorithm,
	cost int64,
) (Result, error) {
	if key == "" {
		return Result{}, ErrEmptyKey
	}
	if l.observer != nil {
		return l.decideAndObserve(ctx, key, alg, cost)
	}
	return l.decideStore(ctx, key, alg, cost)
}

// decideAndObserve is decideStore, with the decision told to the observer:
// apart, so that the path without one keeps a small stack frame.
func (l *Limiter) decideAndObserve(
	ctx context.Context,
	key string,
	alg algorithms.Algorithm,
	cost int64,
) (Result, error) {
	start := time.Now()
	res, err := l.decideStore(ctx, key, alg, cost)
	e := decisionEvent(key, alg, cost, res, err)
	e.StoreLatency = time.Since(start)
	l.observer(ctx, e)
	return res, err
}

// key is key as the store takes it, in the limiter's namespace.
func (l *Limiter) key(key string) store.Key {
	return store.Key{Namespace: l.namespace, Name: key}
}

// decideStore asks the store for one decision, whose key, algorithm and
// cost have been checked.
func (l *Limiter) decideStore(ctx context.Context, key string, alg algorithms.Algorithm, cost int64) (Result, error) {
	now, err := l.now()
	if err != nil {
		return Result{}, err
	}
	return l.store.Decide(ctx, l.key(key), alg, now, cost)
}

// now is the time the limiter decides at: its clock's, or the zero Time
// when that is the system clock, which the store then reads itself, once
// (see store.Store's Decide). A clock of the caller's that reads the zero
// Time is invalid input, not the system clock.
func (l *Limiter) now() (time.Time, error) {
	if l.systemTime {
		return time.Time{}, nil
	}
	now := l.clock.Now()
	if now.IsZero() {
		return now, errZeroTime
	}
	return now, nil
}

// errZeroTime is the error of a Limiter whose clock reads the zero Time.
var errZeroTime = fmt.Errorf("%w: the limiter's clock read the zero time", algorithms.ErrInvalidTime)

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
