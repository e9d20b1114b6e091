// Package lease wraps a store so that an instance deciding a hot key takes a
// lease of k units from the store in one round trip and spends them
// locally, one decision at a time, instead of making a round trip per
// decision. It never lets more through than the store would: every leased
// unit is spent only within the window a direct admission of it could have
// been made in (see internal/lease), so any span of a token bucket's or
// GCRA's admissions, local and direct, of every instance, holds at most
// Burst + span/T, and no fixed window more than its Limit.
//
//	st, err := lease.Wrap(storeredis.New(rdb, storeredis.WithClientTime()), lease.Policy{Instances: 4})
//	limiter, err := ratewise.New(st, algorithms.GCRA{Rate: algorithms.PerSecond(1_000_000), Burst: 10_000})
//
// Only decisions of cost 1 without a request ID, under the token bucket,
// GCRA or the fixed window, lease; every other call goes to the inner store
// as it is. A key leases only while it is hot enough (the lease sizer gives
// 0 otherwise), and a bucket only while it is saturated: on a bucket with
// room, a unit's window closes as soon as it opens. What a lease did not
// spend is given back through the inner store's Refund when it ends, in the
// round trip of the decision that ends it. Leases cost admissions: up to the
// units held in live leases while the store denies, and what a return
// cannot give back. docs/leases.md gives the figures.
//
// Leases need one timeline: the inner store must decide at the now its
// caller passes (storememory always does; storeredis and storepostgres do
// with WithClientTime), and the instances' clocks must agree. A store on its
// own clock is refused by Wrap (ErrCannotLease): every store says which
// clock it is on (store.Capabilities), and a store that wraps another
// passes its inner store's answer on.
//
// Reset on a key ends this instance's lease on it but not other
// instances', whose units stay charged: the inner store (a store.Store.Lease)
// puts back the state the latest lease on the key left, which counts
// every unit a lease still holds, and forgets only what was charged after
// it. So a Reset on a leased key does not make it full. A refund of an
// admission made on a leased key (Limiter.Refund) goes to the inner store,
// which may move other instances' units' windows by its units: leased keys
// should not be refunded. A changed limit ends a lease at this instance's
// next decision under the new one.
package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	core "github.com/ratewise/ratewise/internal/lease"
	"github.com/ratewise/ratewise/store"
)

var _ store.Store = (*Store)(nil)

// ErrCannotLease is wrapped by every error Wrap returns: for a Policy value
// out of range, and, with store.ErrUnsupported, for a store that cannot
// book leases (store.Store.Lease), book (store.Store.Reserve) or refund
// (store.Store.Refund), or that is known to decide on a clock of its own,
// such as a Redis or PostgreSQL store built without WithClientTime (leases
// need the store to decide at the caller's now). The message says which.
var ErrCannotLease = errors.New("lease: cannot lease")

// Policy is how a Store leases. Every field but Instances has a default,
// used when the field is zero.
type Policy struct {
	// Instances is how many instances share the inner store and lease on
	// one key: required, at least 1. A lease given back after another
	// instance booked behind it moves that instance's units' windows
	// earlier, by at most its units × T, so every lease's deadlines are
	// brought forward by (Instances-1) × the largest lease × T. Stating
	// more instances than there are is safe and shortens windows; stating
	// fewer may over-admit.
	Instances int

	// RoundTrip is about how long a round trip to the store takes; the
	// default is 1ms. A lease holds what the instance spends on the key in
	// Lifetime round trips.
	RoundTrip time.Duration

	// Lifetime is how many round trips a lease lasts at the instance's
	// rate; the default is 4.
	Lifetime int64

	// Divisor caps a lease at Burst / Divisor units (the capacity for the
	// token bucket, the limit for the fixed window). The default is 2 ×
	// Instances, and at least 8; it must be at least Instances, or no lease
	// would fit its window. With the default the deadlines are brought
	// forward by less than half the burst's span (see Instances).
	Divisor int64

	// Min is the fewest units worth a lease: the default is 2.
	Min int64

	// MaxKeys bounds the keys the Store keeps a lease or a rate estimate
	// for; the default is 4096. Beyond it idle keys are dropped first,
	// their leases ended.
	MaxKeys int

	// Clock is read by Close, and when a new key finds the table full,
	// for the time the leases they end give back at; nil is the system
	// clock. Decisions go by the now they are given.
	Clock interface{ Now() time.Time }
}

// Default policy values.
const (
	defaultRoundTrip = time.Millisecond
	defaultLifetime  = 4
	defaultMin       = 2
	defaultMaxKeys   = 4096
	minDivisor       = 8
)

// withDefaults returns p with its zero fields set, or an error naming the
// first field out of range.
func (p Policy) withDefaults() (Policy, error) {
	if p.Instances < 1 {
		return p, fmt.Errorf("%w: Instances must be >= 1, got %d", ErrCannotLease, p.Instances)
	}
	if p.RoundTrip == 0 {
		p.RoundTrip = defaultRoundTrip
	}
	if p.RoundTrip < time.Microsecond {
		return p, fmt.Errorf("%w: RoundTrip must be >= 1µs, got %v", ErrCannotLease, p.RoundTrip)
	}
	if p.Lifetime == 0 {
		p.Lifetime = defaultLifetime
	}
	if p.Lifetime < 1 {
		return p, fmt.Errorf("%w: Lifetime must be >= 1, got %d", ErrCannotLease, p.Lifetime)
	}
	if p.Divisor == 0 {
		p.Divisor = max(2*int64(p.Instances), minDivisor)
	}
	if p.Divisor < int64(p.Instances) {
		return p, fmt.Errorf("%w: Divisor must be >= Instances (%d), got %d", ErrCannotLease, p.Instances, p.Divisor)
	}
	if p.Min == 0 {
		p.Min = defaultMin
	}
	if p.Min < 1 {
		return p, fmt.Errorf("%w: Min must be >= 1, got %d", ErrCannotLease, p.Min)
	}
	if p.MaxKeys == 0 {
		p.MaxKeys = defaultMaxKeys
	}
	if p.MaxKeys < 1 {
		return p, fmt.Errorf("%w: MaxKeys must be >= 1, got %d", ErrCannotLease, p.MaxKeys)
	}
	if p.Clock == nil {
		p.Clock = systemClock{}
	}
	return p, nil
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Store is a store that leases on hot keys (see the package doc) and
// passes everything else to the store it wraps. It is safe for concurrent
// use; Close gives back what its leases hold.
type Store struct {
	inner store.Store
	idem  bool // the inner store applies request IDs: a booking may be retried
	p     Policy
	// sizing is the policy of every key's lease sizer.
	sizing core.Policy

	idPrefix string        // this Store's part of every lease's request ID
	seq      atomic.Uint64 // the next lease's number

	mu        sync.RWMutex
	entries   map[entryKey]*entry // guarded by mu
	closed    atomic.Bool
	nextSweep atomic.Int64 // µs on the Policy's clock
}

// Wrap returns a Store that leases from s under p. s must decide at the now
// it is given (store.Capabilities; see the package doc): a store on its
// own clock is ErrCannotLease, and so is a Store, which leases already.
// s books leases (store.Store.Lease) and refunds what they did not spend.
func Wrap(s store.Store, p Policy) (*Store, error) {
	p, err := p.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, ok := s.(*Store); ok {
		return nil, fmt.Errorf("%w: %T already leases: wrap the store it wraps: %w", ErrCannotLease, s, store.ErrUnsupported)
	}
	caps := s.Capabilities()
	if caps.OwnClock {
		return nil, fmt.Errorf(
			"%w: %T ignores the now it is given (build it WithClientTime): %w",
			ErrCannotLease,
			s,
			store.ErrUnsupported,
		)
	}
	sizing := core.Policy{RoundTrip: p.RoundTrip, Lifetime: p.Lifetime, Divisor: p.Divisor, Min: p.Min}
	if _, err := core.NewSizer(sizing); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCannotLease, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	w := &Store{
		inner:    s,
		idem:     caps.RequestIDs,
		p:        p,
		sizing:   sizing,
		idPrefix: "lease:" + hex.EncodeToString(b[:]) + ":",
		entries:  map[entryKey]*entry{},
	}
	return w, nil
}

// Reset resets key's state under alg in the inner store, which puts back
// the state the latest lease on the key left (store.Store.Lease), and ends this
// instance's lease on it, giving back what it did not spend into that
// state. Other instances' leases live on until they end, their units
// charged in it (see the package doc).
func (s *Store) Reset(ctx context.Context, key store.Key, alg algorithms.Algorithm) error {
	err := s.inner.Reset(ctx, key, alg)
	if k, ok := keyOf(key, alg); ok {
		if back, held := s.drop(k); held && err == nil {
			_ = s.giveBack(ctx, []giveBack{back})
		}
	}
	return err
}

// Reserve is the inner store's Reserve.
func (s *Store) Reserve(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return s.inner.Reserve(ctx, key, alg, now, cost, maxWait)
}

// Refund is the inner store's Refund (see the package doc on refunds of a
// leased key).
func (s *Store) Refund(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	return s.inner.Refund(ctx, key, alg, now, at, n)
}

// Lease fails with store.ErrUnsupported: a Store leases for its own
// decisions, and is not the inner store of another (see Wrap).
func (s *Store) Lease(
	ctx context.Context,
	key store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return algorithms.Result{}, 0, fmt.Errorf("%w: a lease.Store books no leases for another", store.ErrUnsupported)
}

// Capabilities is the inner store's: it decides at the now it is given,
// and applies request IDs as the inner store does.
func (s *Store) Capabilities() store.Capabilities { return s.inner.Capabilities() }

// DecideSet is the inner store's DecideSet: sets never lease.
func (s *Store) DecideSet(
	ctx context.Context,
	key store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	return s.inner.DecideSet(ctx, key, algs, now, cost)
}

// Close ends every lease, giving back what each holds, and makes the Store
// pass every later call to the inner store. Without it, the units leases
// hold when the process stops are lost until their windows pass: the key
// admits that many fewer, never more. It returns the first error of a
// give-back, after trying every one.
func (s *Store) Close(ctx context.Context) error {
	s.closed.Store(true)
	s.mu.Lock()
	var backs []giveBack
	for k, e := range s.entries {
		e.mu.Lock()
		backs = append(backs, e.end(s.p.Clock.Now()))
		e.dead = true
		e.mu.Unlock()
		delete(s.entries, k)
	}
	s.mu.Unlock()
	return s.giveBack(ctx, backs)
}
