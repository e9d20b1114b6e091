package pgprobe

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/ratewise/ratewise/internal/pgschema"
)

// minVersion is the oldest PostgreSQL the store runs on
// (server_version_num): its sweeps find expired rows by TID range scans,
// which came in 14.
const minVersion = 140000

// Run checks that storepostgres's store runs as documented on pool's
// database, as pool's role, and reports each check as a Finding, in this
// order: the server's reachability and version (14 or later); the schema
// ratewise (absent, which the store creates on first use; at this store's
// version; or at another, which it migrates, or refuses if newer); and the
// role's privileges for what the store will do there: create the schema
// (CREATE on the database), or use it (USAGE on it, SELECT, INSERT, UPDATE
// and DELETE on ratewise.state and ratewise.once, SELECT on ratewise.meta,
// EXECUTE on its functions), and migrate it when it is at an older version
// (CREATE on the database and the schema, ownership of its functions). A
// privilege missing is a failure whose Change is the GRANT that gives it.
//
// A superuser passes every check, so run it as the app's own role. It only reads, and never changes the pool. When the
// server cannot be reached, or ctx ends, the check under way reports it and
// the checks after it are skipped.
func Run(ctx context.Context, pool *pgxpool.Pool) Report {
	p := &prober{pool: pool}
	p.probe(ctx)
	return Report{Findings: p.findings}
}

// prober runs Run's checks and collects their findings.
type prober struct {
	pool     *pgxpool.Pool
	findings []Finding

	role, database string // as quote_ident writes them, for GRANTs
	who            string // "role app in database app"
	schema         schemaState
}

// schemaState is what the schema check found.
type schemaState struct {
	exists, hasMeta bool
	version         int // -1 when unknown
	compatible      int // the oldest store version the schema serves
	owner           string
}

// migrates reports whether the store's first use runs its DDL: the schema
// is missing, has no ratewise.meta, or is at an older version.
func (s schemaState) migrates() bool {
	return !s.exists || !s.hasMeta || (s.version >= 0 && s.version < pgschema.Version)
}

func (p *prober) add(check string, st Status, found, change string) {
	p.findings = append(p.findings, Finding{Check: check, Status: st, Found: found, Change: change})
}

func (p *prober) probe(ctx context.Context) {
	if !p.server(ctx) {
		return
	}
	if !p.schemaCheck(ctx) {
		return
	}
	p.permissions(ctx)
}

// server checks that the server answers and its version, and learns the
// role and database.
func (p *prober) server(ctx context.Context) bool {
	var num int
	var version, user, db string
	err := p.pool.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version'),
		current_user, current_database(), quote_ident(current_user), quote_ident(current_database())`).
		Scan(&num, &version, &user, &db, &p.role, &p.database)
	if err != nil {
		p.add(
			"server",
			StatusFailure,
			"unreachable: "+oneLine(err.Error()),
			"check the URL, the network and the server's pg_hba.conf",
		)
		return false
	}
	p.who = fmt.Sprintf("role %s in database %s", user, db)
	st, found, change := versionFinding(num, version)
	p.add("server", st, found+", as "+p.who, change)
	return true
}

// versionFinding judges a server_version_num and server_version.
func versionFinding(num int, version string) (Status, string, string) {
	found := "PostgreSQL " + strings.Fields(version + " ?")[0]
	if num < minVersion {
		return StatusFailure, found + ": the store needs 14 or later, whose TID range scans its sweeps of expired rows use",
			"upgrade to PostgreSQL 14 or later"
	}
	return StatusOK, found, ""
}

// schemaCheck finds the schema ratewise and its version. It reads the
// catalogs, which every role may, and ratewise.meta, which needs SELECT.
func (p *prober) schemaCheck(ctx context.Context) bool {
	s := &p.schema
	s.version = -1
	err := p.pool.QueryRow(ctx, `SELECT
		coalesce((SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'ratewise'), ''),
		EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = 'ratewise' AND c.relname = 'meta')`).
		Scan(&s.owner, &s.hasMeta)
	if err != nil {
		p.add("schema", StatusFailure, "not checked: "+oneLine(err.Error()), "")
		return false
	}
	s.exists = s.owner != ""
	switch {
	case !s.exists:
		p.add(
			"schema",
			StatusOK,
			"absent: the store creates the schema ratewise on first use, or when Migrate is called, if the role may "+
				"(see permissions)",
			"",
		)
		return true
	case !s.hasMeta:
		p.add(
			"schema",
			StatusWarning,
			"ratewise exists, owned by "+s.owner+", without the table ratewise.meta, so not as the store made it: "+
				"the store will create its tables and functions in it on first use, if the role may (see permissions)",
			"if the schema ratewise is another program's, give the store a database of its own",
		)
		return true
	}
	// A schema of version 4 or older has no column compatible, and serves
	// its own version.
	if err := p.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0),
		coalesce(min((to_jsonb(m)->>'compatible')::int), max(version), 0)
		FROM ratewise.meta m`).Scan(&s.version, &s.compatible); err != nil {
		// The store reads it on first use, so the role's privileges fail
		// too, which the permissions check reports.
		s.version = -1
		p.add(
			"schema",
			StatusWarning,
			"ratewise exists, owned by "+s.owner+"; its version cannot be read as this role: "+oneLine(err.Error()),
			"see permissions",
		)
		return true
	}
	switch {
	case s.version == pgschema.Version:
		p.add("schema", StatusOK, fmt.Sprintf("ratewise at version %d, this store's, owned by %s", s.version, s.owner), "")
	case s.version < pgschema.Version:
		p.add(
			"schema",
			StatusWarning,
			fmt.Sprintf("ratewise at version %d, older than this store's %d: the store migrates it on its first use, "+
				"in one transaction, if the role may (see permissions)", s.version, pgschema.Version),
			"call storepostgres.Store.Migrate once as the schema's owner before the new version serves",
		)
	case s.compatible <= pgschema.Version:
		p.add(
			"schema",
			StatusOK,
			fmt.Sprintf("ratewise at version %d, newer than this store's %d, which it still serves, owned by %s",
				s.version, pgschema.Version, s.owner),
			"",
		)
	default:
		p.add(
			"schema",
			StatusFailure,
			fmt.Sprintf("ratewise at version %d, newer than this store's %d: the store refuses it, and every decision fails",
				s.version, pgschema.Version),
			fmt.Sprintf("run a ratewise whose schema is at version %d, or give this one a database of its own", s.version),
		)
	}
	return true
}
