// Package storepostgres is the PostgreSQL ratewise store, for app instances
// that share a database and no Redis. It needs PostgreSQL 14 or later.
//
// Every decision is one statement in one round trip: an INSERT … ON
// CONFLICT DO UPDATE that locks the key's row, runs the algorithm's step on
// its state inside the database and writes the outcome. The steps are
// PL/pgSQL functions that compute exactly what the algorithm's Go step
// does, in integer microseconds, and the differential tests hold them to
// it. Go never reads a state and writes it back, and nothing retries:
// concurrent decisions on one key queue on its row lock, each deciding on
// the state the one before it left. Under load, concurrent decisions share
// transactions, a batch per round trip (WithCoalescing). Requests with a request ID
// (ratewise.WithRequestID), refunds, sets and resets with an ID are one
// call of a server-side function each, also one round trip.
//
// By default a decision reads the server's clock (clock_timestamp(), after
// the row's lock is taken), so app servers whose clocks disagree share one
// timeline, and the now a limiter passes is ignored. WithClientTime uses
// the caller's now instead. Either way a key never decides at a time
// earlier than the latest it has seen (see package algorithms).
//
// The store keeps its tables and functions in the schema ratewise, which it
// creates on first use, or when Migrate is called (see docs/postgres.md for
// the permissions it needs). A key's state is one row of ratewise.state,
// whose key is the algorithm, its scope and the key, such as
// "gcra:1s:alice". PostgreSQL has no expiry of its own: every write sets
// the time the row stops counting, and the store deletes rows past it a
// few pages at a time as it works.
package storepostgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/coalesce"
	"github.com/ratewise/ratewise/internal/longkey"
	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
)

var _ store.Store = (*Store)(nil)

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	pool       *pgxpool.Pool
	clientTime bool
	grace      int64 // µs a state is kept beyond what it counts: storecheck.ExpiryGrace in client-time mode
	unlogged   bool
	sweep      sweeper
	bg         *background                    // runs the sweeps
	coalesce   int                            // WithCoalescing's n
	co         *coalesce.Coalescer[*decision] // nil when decisions go alone
	// lockTimeout is batchLockTimeout, which a test of the package may
	// lengthen.
	lockTimeout string

	migrating chan struct{} // holds a token while a migration runs
	migrated  atomic.Bool
	newer     atomic.Pointer[error] // the schema is newer than this store: every use fails with it
}

// Option configures a Store.
type Option interface {
	apply(*Store)
}

type optionFunc func(*Store)

func (f optionFunc) apply(s *Store) { f(s) }

// WithClientTime makes decisions use the now the limiter passes (its
// clock, ratewise.WithClock) instead of the server's clock. Tests use it to drive time; it also suits
// deployments whose app servers keep their clocks in sync. Clocks that
// disagree then disagree on windows. Rows expire on the server's clock,
// a second later than their state stops counting, so that a clock
// reading that reaches the server late still finds the state.
func WithClientTime() Option {
	return optionFunc(func(s *Store) { s.clientTime, s.grace = true, storecheck.ExpiryGrace.Microseconds() })
}

// WithUnlogged makes the store create its tables UNLOGGED when it creates
// its schema: writes skip the write-ahead log, which makes decisions
// faster, and a crash of the server empties the tables (every key starts
// again with its full limit), which replicas never see either. A schema
// that exists keeps its tables as they are; see docs/postgres.md.
func WithUnlogged() Option {
	return optionFunc(func(s *Store) { s.unlogged = true })
}

// New returns a store on pool. The store creates its schema on first use;
// call Migrate to create it, or to learn that it cannot, before then.
func New(pool *pgxpool.Pool, opts ...Option) *Store {
	s := &Store{
		pool:        pool,
		coalesce:    defaultCoalescing,
		lockTimeout: batchLockTimeout,
		bg:          newBackground(),
		migrating:   make(chan struct{}, 1),
	}
	s.sweep.init()
	for _, o := range opts {
		o.apply(s)
	}
	if s.coalesce > 0 {
		s.co = s.newCoalescer()
	}
	return s
}

// Close stops what the store runs on goroutines of its own, and waits for
// them: the sweeps that delete expired rows, and the goroutines that send
// shared transactions (WithCoalescing), once they have sent every decision
// queued. Calls after Close still decide, each alone, and no row is swept
// any more: close a store once nothing uses it, and a leasing layer over
// it (lease.Store.Close) before it. It does not close the pool, which is
// the caller's. It returns nil.
func (s *Store) Close() error {
	s.bg.close()
	s.co.Close()
	return nil
}

// Batches returns how many shared transactions (WithCoalescing) the store
// has sent since it was made, and how many decisions they carried: their
// ratio is the mean batch. Both are 0 with coalescing off.
func (s *Store) Batches() (batches, decisions int64) {
	c := s.co.Counts()
	return c.Batches, c.Batched
}

// begin readies a request: it returns ctx's request ID and whether it has
// one, which must be valid, once the schema is in place (ensure).
func (s *Store) begin(ctx context.Context) (id string, given bool, err error) {
	id, given = requestid.From(ctx)
	if given {
		if err := storecheck.RequestID(ctx); err != nil {
			return "", false, err
		}
	}
	return id, given, s.ensure(ctx)
}

// checkKind returns an error wrapping store.ErrUnsupported if alg is not
// of its Kind's own type.
func checkKind(alg algorithms.Algorithm) error {
	if err := algo.CheckKind(alg); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnsupported, err)
	}
	return nil
}

// orNow is the now the store decides at in client-time mode
// (WithClientTime): now, or the system clock's for the zero now. On the
// server's clock now is not used, and stays as it is.
func (s *Store) orNow(now time.Time) time.Time {
	if s.clientTime {
		return storecheck.Now(now)
	}
	return now
}

// checkTime is the time a request is checked at: its now in client-time
// mode, and otherwise a time that passes, since now is ignored.
func (s *Store) checkTime(now time.Time) time.Time {
	if s.clientTime {
		return now
	}
	return time.Unix(0, 0)
}

// clock returns a statement's now, nil for the server's clock, and the
// earliest time its result may have been decided at, in µs.
func (s *Store) clock(now time.Time) (arg *int64, notBefore int64) {
	if !s.clientTime {
		return nil, 0
	}
	us := now.UnixMicro()
	return &us, us
}

// key returns the row key of alg's state for k: the kind, the scope and
// the key, such as "gcra:1s:alice". A key longer than longkey.Threshold
// is kept under its SHA-256 digest, after "#": "#gcra:1s:" and 32 bytes.
// Every other row key starts with a kind's name, and a mark with "!"
// (markKey), so no digest is another row's key, and a row key is at most
// a few dozen bytes over the threshold, which PostgreSQL's index takes
// with a request ID beside it (onceKey).
func key(k store.Key, alg algorithms.Algorithm) []byte {
	long := longkey.Over(k.Namespace, k.Name)
	b := make([]byte, 0, 40+min(len(k.Namespace)+len(k.Name), longkey.Threshold))
	if long {
		b = append(b, '#')
	}
	b = append(b, alg.Kind().String()...)
	b = append(b, ':')
	b = algo.ScopeOf(alg).Append(b)
	b = append(b, ':')
	if long {
		sum := longkey.Sum(k.Namespace, k.Name)
		return append(b, sum[:]...)
	}
	if k.Namespace != "" {
		b = append(b, k.Namespace...)
		b = append(b, ':')
	}
	return append(b, k.Name...)
}

// queryRow runs sql with args on a connection it acquires first, and scans
// its one row into dest. An error acquiring the connection (the caller's
// context ending while it waits for one, the pool closed, a dial that
// fails) is a notSent: the statement never left.
func (s *Store) queryRow(ctx context.Context, sql string, args []any, dest ...any) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return notSent{err}
	}
	defer conn.Release()
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}

// notSent is the error of a statement that was never sent.
type notSent struct{ err error }

func (e notSent) Error() string { return e.err.Error() }
func (e notSent) Unwrap() error { return e.err }

// failure is the error a request returns when its statement failed with
// err: the caller's context error if that is why, and otherwise err
// wrapping store.ErrUnavailable, and store.ErrMaybeDecided too when the
// request writes (writes) and err may have come after the server ran it.
func (s *Store) failure(ctx context.Context, err error, writes bool) error {
	if errors.As(err, new(notSent)) {
		writes = false // nothing was sent, so nothing was decided
	}
	if ctx.Err() != nil && (errors.Is(err, ctx.Err()) || pgconn.Timeout(err)) {
		if writes && !pgconn.SafeToRetry(err) {
			return storecheck.MaybeDecided(ctx.Err())
		}
		return ctx.Err()
	}
	f := fmt.Errorf("%w: postgres: %w", store.ErrUnavailable, err)
	if writes && sent(err) {
		return storecheck.MaybeDecided(f)
	}
	return f
}

// sent reports whether a statement that failed with err may have run on
// the server and committed. It did not if pgx never sent it (SafeToRetry,
// or a connection that could not be made), or if the server answered
// with an error:
// a statement that fails is rolled back. Any other error, such as a
// connection lost while waiting for the reply, may have come after the
// commit.
func sent(err error) bool {
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	return !pgconn.SafeToRetry(err) && !errors.As(err, &pgErr) && !errors.As(err, &connErr)
}

// Capabilities reports the store's clock, the server's unless
// WithClientTime, and that it applies request IDs once.
func (s *Store) Capabilities() store.Capabilities {
	return store.Capabilities{OwnClock: !s.clientTime, RequestIDs: true}
}
