package storepostgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/internal/pgschema"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres/internal/pgsql"
)

// A rolling deploy runs stores of two versions on one schema at once. The
// newer one migrates the schema, while the older ones keep deciding, with
// the statements of theirs. ratewise.meta says, beside the schema's
// version, the oldest store version whose statements keep working against
// it (pgschema.Compatible): a schema replaces functions and keeps the ones
// older stores call for as long as it says they work. A store runs on a
// schema of its own version, or on a newer one that says it still serves
// its statements, and refuses any other, every call failing with
// store.ErrUnavailable: on its first use, and, since a newer store may
// migrate while it runs, each time it sweeps (about every 64 writes)
// after that.

// Migrate creates the store's schema, or brings it to this version, in one
// transaction. Instances that migrate at once take turns: the first
// creates the schema, the others find it made. A schema newer than the
// store's that still serves its statements is left as it is; one that does
// not is an error wrapping store.ErrUnavailable, which every later call of
// the store returns too.
func (s *Store) Migrate(ctx context.Context) error {
	// One migration at a time in this process; a caller whose context ends
	// while it waits for another's gives up.
	select {
	case s.migrating <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.migrating }()
	if err := migrate(ctx, s.pool, s.unlogged); err != nil {
		if errors.Is(err, errNewerSchema) {
			return s.refuse(err)
		}
		return s.failure(ctx, err, false)
	}
	s.migrated.Store(true)
	return nil
}

// refuse makes every later call of the store fail with err, which wraps
// errNewerSchema, and returns it wrapping store.ErrUnavailable.
func (s *Store) refuse(err error) error {
	f := fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	s.newer.Store(&f)
	return f
}

// ensure migrates once, on the store's first use. A store that found the
// schema newer than it can run on fails every use without asking again:
// only a newer store can use it.
func (s *Store) ensure(ctx context.Context) error {
	if err := s.newer.Load(); err != nil {
		return *err
	}
	if s.migrated.Load() {
		return nil
	}
	return s.Migrate(ctx)
}

// errNewerSchema is wrapped when the schema is newer than this store's,
// and no longer serves its statements.
var errNewerSchema = errors.New("storepostgres: the schema ratewise is newer than this store's")

// migrationLock is the advisory lock that serialises migrations.
const migrationLock = 7305_0001

// readVersion is the statement that reads the schema's version and the
// oldest store version it serves: the version itself for a schema of
// version 4 or older, whose meta has no column compatible.
const readVersion = `SELECT coalesce(max(version), 0),
	coalesce(min((to_jsonb(m)->>'compatible')::int), max(version), 0) FROM ratewise.meta m`

// checkVersion returns an error wrapping errNewerSchema if a schema of
// version, which serves stores from compatible on, cannot serve this one.
func checkVersion(version, compatible int) error {
	if version > pgschema.Version && compatible > pgschema.Version {
		return fmt.Errorf("%w: version %d, which serves stores of version %d and later, this store's %d",
			errNewerSchema, version, compatible, pgschema.Version)
	}
	return nil
}

func migrate(ctx context.Context, pool *pgxpool.Pool, unlogged bool) error {
	ddl, err := pgsql.Schema(unlogged)
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return err
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('ratewise.meta') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	version, compatible := 0, 0
	if exists {
		if err := tx.QueryRow(ctx, readVersion).Scan(&version, &compatible); err != nil {
			return err
		}
	}
	if version >= pgschema.Version {
		if err := checkVersion(version, compatible); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	if _, err := tx.Exec(ctx, ddl); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "DELETE FROM ratewise.meta"); err != nil {
		return err
	}
	const insert = "INSERT INTO ratewise.meta (version, compatible) VALUES ($1, $2)"
	if _, err := tx.Exec(ctx, insert, pgschema.Version, pgschema.Compatible); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// recheck reads the schema's version again, as a sweep does, and makes the
// store refuse every later call if a newer store has since migrated it to
// a version that no longer serves this one's statements.
func (s *Store) recheck(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) error {
	var version, compatible int
	if err := q.QueryRow(ctx, readVersion).Scan(&version, &compatible); err != nil {
		return err
	}
	if err := checkVersion(version, compatible); err != nil {
		_ = s.refuse(err)
		return err
	}
	return nil
}
