package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

// Postgres is a PostgreSQL database, through storepostgres's store in
// client-time mode. Runs are serial, as on Redis, and replay 16 keys at
// once (see KeyParallel). Each run keeps its keys in a namespace of its own
// in the store's table, ratewise.state, and deletes them when it is done,
// so that a database that other apps use keeps only their rows.
type Postgres struct {
	pool       *pgxpool.Pool
	statements atomic.Int64
	prefix     string
	runs       int
}

// DialPostgres connects to the database cfg describes, checks that it
// answers and creates or updates the store's schema there (see
// storepostgres.Store.Migrate). where says in errors what cfg connects to,
// and must hold no password. The target's Close closes the pool it opens.
// It counts statements with a pgx.QueryTracer that passes each on to cfg's
// own tracer, if any, as a query; a tracer's other interfaces (batches,
// COPY, connecting) are not passed on.
func DialPostgres(ctx context.Context, cfg *pgxpool.Config, where string) (*Postgres, error) {
	p := &Postgres{}
	cfg = cfg.Copy()
	cfg.ConnConfig.Tracer = statementCounter{n: &p.statements, next: cfg.ConnConfig.Tracer}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", store.ErrUnavailable, where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: %s: %v", store.ErrUnavailable, where, err)
	}
	if err := storepostgres.New(pool).Migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	var id [4]byte
	rand.Read(id[:])
	p.pool, p.prefix = pool, "ratewise-compare:"+hex.EncodeToString(id[:])+":"
	return p, nil
}

// Name returns "postgres".
func (p *Postgres) Name() string { return "postgres" }

// Parallel returns false: the statement count is the pool's, and one run's
// load would slow another's.
func (p *Postgres) Parallel() bool { return false }

// ReplayGoroutines returns 16, as for Redis: a run replays 16 keys at once,
// each decision one statement.
func (p *Postgres) ReplayGoroutines() int { return redisReplayGoroutines }

// Close closes the pool.
func (p *Postgres) Close() { p.pool.Close() }

// Pool returns the pool the target runs on, for measurements that ask
// PostgreSQL itself, such as the size of the store's table.
func (p *Postgres) Pool() *pgxpool.Pool { return p.pool }

// Open returns a store writing under a namespace of its own.
func (p *Postgres) Open(ctx context.Context) (Instance, error) {
	p.runs++
	s := storepostgres.New(p.pool, storepostgres.WithClientTime())
	// The store checks its schema on first use; done here, it is not
	// counted against the run's decisions.
	if err := s.Migrate(ctx); err != nil {
		return nil, err
	}
	return &postgresInstance{
		p:    p,
		s:    namespaced{s, fmt.Sprintf("%s%d", p.prefix, p.runs)},
		base: p.statements.Load(),
	}, nil
}

type postgresInstance struct {
	p    *Postgres
	s    namespaced
	base int64
}

func (i *postgresInstance) Store() store.Store { return i.s }

// Ops counts every statement sent since the run opened as a round trip: a
// decision is one, and so is each of the store's sweeps of expired rows.
// PostgreSQL runs no commands to count.
func (i *postgresInstance) Ops(context.Context) (Ops, error) {
	return Ops{RoundTrips: i.p.statements.Load() - i.base, Commands: -1}, nil
}

// BytesPerKey measures the run's rows as the workload left them: see
// rowBytes.
func (i *postgresInstance) BytesPerKey(
	ctx context.Context,
	_ *workload.Workload,
	_ []string,
	_ algorithms.Algorithm,
) (float64, int, error) {
	return rowBytes(ctx, i.p.pool, i.s.pattern())
}

// Close deletes the run's rows.
func (i *postgresInstance) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = i.p.pool.Exec(ctx, "DELETE FROM ratewise.state WHERE key LIKE $1", i.s.pattern())
}

// What rowBytes copies: at least minTableRows rows, unless that would write
// more than maxTableBytes.
const (
	minTableRows  = 10_000
	maxTableBytes = 32 << 20
)

// rowBytes copies the rows of ratewise.state whose keys match pattern into
// a temporary table laid out as ratewise.state (its columns, their storage
// and compression, its primary key and its fill factor), as many times as
// make at least minTableRows rows, each copy's keys 4 bytes longer, and
// returns the temporary table's size on disk, with its index and TOAST
// (pg_total_relation_size), per row, and how many rows that is. A copy,
// rather than ratewise.state's own size: that table holds earlier runs'
// deleted rows, which vacuum makes room of, and perhaps other apps' keys,
// and it grows by whole pages, which one key's row would not fill. The
// temporary table, dropped at once, holds these rows alone, packed as the
// store's inserts pack them, before updates and deletions leave dead space.
func rowBytes(ctx context.Context, pool *pgxpool.Pool, pattern []byte) (float64, int, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: postgres: %v", store.ErrUnavailable, err)
	}
	defer tx.Rollback(ctx) // which drops the temporary table
	var rows, size int64
	var fillFactor int
	err = tx.QueryRow(ctx, `SELECT count(*), coalesce(sum(pg_column_size(s.*)), 0),
		coalesce((SELECT o.option_value::int FROM pg_class c, pg_options_to_table(c.reloptions) o
			WHERE c.oid = 'ratewise.state'::regclass AND o.option_name = 'fillfactor'), 100)
		FROM ratewise.state s WHERE s.key LIKE $1`, pattern).Scan(&rows, &size, &fillFactor)
	if err != nil || rows == 0 {
		return 0, 0, err
	}
	copies := max(1, min((minTableRows+rows-1)/rows, maxTableBytes/max(size, 1)))
	_, err = tx.Exec(ctx, fmt.Sprintf(`CREATE TEMPORARY TABLE ratewise_measure (LIKE ratewise.state INCLUDING ALL)
		WITH (fillfactor = %d) ON COMMIT DROP`, fillFactor))
	if err != nil {
		return 0, 0, fmt.Errorf("measuring bytes per key in a temporary table: %w", err)
	}
	var total, n int64
	err = tx.QueryRow(ctx, `WITH copied AS (
			INSERT INTO ratewise_measure (key, state, expires, res)
			SELECT s.key || int4send(i), s.state, s.expires, s.res FROM ratewise.state s, generate_series(1, $2::int) i
			WHERE s.key LIKE $1
			RETURNING 1)
		SELECT count(*) FROM copied`, pattern, copies).Scan(&n)
	if err == nil {
		err = tx.QueryRow(ctx, "SELECT pg_total_relation_size('ratewise_measure')").Scan(&total)
	}
	if err != nil || n == 0 {
		return 0, 0, err
	}
	return float64(total) / float64(n), int(n), nil
}

// namespaced is a store whose keys all go into one namespace, before any
// the caller gives, as a run's keys do.
type namespaced struct {
	s  *storepostgres.Store
	ns string
}

func (n namespaced) key(k store.Key) store.Key {
	if k.Namespace == "" {
		k.Namespace = n.ns
	} else {
		k.Namespace = n.ns + ":" + k.Namespace
	}
	return k
}

func (n namespaced) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	return n.s.Decide(ctx, n.key(k), alg, now, cost)
}

func (n namespaced) Reset(ctx context.Context, k store.Key, alg algorithms.Algorithm) error {
	return n.s.Reset(ctx, n.key(k), alg)
}

// pattern matches the row keys of the namespace, which follow the kind and
// the scope ("gcra:1s:<namespace>:<key>"). The namespace holds no LIKE
// wildcard.
func (n namespaced) pattern() []byte { return []byte("%:" + n.ns + ":%") }

// statementCounter counts the statements a pool's connections send,
// passing each on to the tracer the caller's configuration had, if any.
type statementCounter struct {
	n    *atomic.Int64
	next pgx.QueryTracer
}

func (c statementCounter) TraceQueryStart(
	ctx context.Context,
	conn *pgx.Conn,
	data pgx.TraceQueryStartData,
) context.Context {
	c.n.Add(1)
	if c.next != nil {
		return c.next.TraceQueryStart(ctx, conn, data)
	}
	return ctx
}

func (c statementCounter) TraceQueryEnd(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryEndData) {
	if c.next != nil {
		c.next.TraceQueryEnd(ctx, conn, data)
	}
}

func (n namespaced) DecideSet(
	ctx context.Context,
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	return n.s.DecideSet(ctx, n.key(k), algs, now, cost)
}

func (n namespaced) Reserve(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return n.s.Reserve(ctx, n.key(k), alg, now, cost, maxWait)
}

func (n namespaced) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	c int64,
) (algorithms.Result, error) {
	return n.s.Refund(ctx, n.key(k), alg, now, at, c)
}

func (n namespaced) Lease(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return n.s.Lease(ctx, n.key(k), alg, now, cost, maxWait)
}

func (n namespaced) Capabilities() store.Capabilities { return n.s.Capabilities() }
