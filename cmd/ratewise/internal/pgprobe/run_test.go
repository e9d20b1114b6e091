package pgprobe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/pgschema"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storepostgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// runID keeps the databases and roles of different runs apart on the
// shared server.
var runID = func() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// fixture is a database of its own on the shared server, and a role with
// no privileges but to log in.
type fixture struct {
	srv        *pgtest.Server
	db, noPriv string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		srv:    pgtest.Shared(t),
		db:     "probe_" + runID + "_" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "_")),
		noPriv: "app_" + runID,
	}
	if len(f.db) > 63 {
		f.db = f.db[:63]
	}
	admin := f.pool(t, "ratewise", "ratewise")
	f.exec(t, admin, "CREATE DATABASE "+f.db)
	f.exec(
		t,
		admin,
		fmt.Sprintf("DO $$ BEGIN CREATE ROLE %s LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$", f.noPriv),
	)
	return f
}

// pool connects to database db as role.
func (f *fixture) pool(t *testing.T, role, db string) *pgxpool.Pool {
	t.Helper()
	p, err := pgxpool.New(
		context.Background(),
		fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", role, f.srv.Port, db),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func (f *fixture) exec(t *testing.T, p *pgxpool.Pool, sql string) {
	t.Helper()
	if _, err := p.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// admin is the superuser's pool on the fixture's database; migrated, it
// holds the store's schema, at this version.
func (f *fixture) admin(t *testing.T, migrated bool) *pgxpool.Pool {
	p := f.pool(t, "ratewise", f.db)
	if migrated {
		if err := storepostgres.New(p).Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// finding returns rep's finding of check, failing t if there is none.
func finding(t *testing.T, rep Report, check string) Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %v", check, rep.Findings)
	return Finding{}
}

// expect checks that rep's finding of check has status st and says every
// phrase of says, in Found or Change.
func expect(t *testing.T, rep Report, check string, st Status, says ...string) Finding {
	t.Helper()
	f := finding(t, rep, check)
	if f.Status != st {
		t.Errorf("%s: got %v, want %v: %v", check, f.Status, st, f)
	}
	for _, s := range says {
		if !strings.Contains(f.Found+" change: "+f.Change, s) {
			t.Errorf("%s does not say %q: %v", check, s, f)
		}
	}
	return f
}

// decide makes one decision on the store, as the store's own first use.
func decide(p *pgxpool.Pool) error {
	_, err := storepostgres.New(p).
		Decide(context.Background(), store.Key{Name: "probe"},
			algorithms.FixedWindow{Limit: 5, Window: time.Minute}, time.Now(), 1)
	return err
}

// A superuser on a database without the schema: every check passes, and
// the store then creates it.
func TestAbsentSchema(t *testing.T) {
	f := newFixture(t)
	p := f.admin(t, false)
	rep := Run(context.Background(), p)
	expect(t, rep, "server", StatusOK, "PostgreSQL ", "as role ratewise in database "+f.db)
	expect(t, rep, "schema", StatusOK, "absent: the store creates the schema ratewise on first use")
	expect(t, rep, "permissions", StatusOK, "may create the schema ratewise (CREATE on the database)")
	if len(rep.Findings) != 3 || rep.Worst() != StatusOK {
		t.Errorf("findings %v, worst %v; want three, all ok", rep.Findings, rep.Worst())
	}
}

// A role without privileges gets the permission finding, whose change is
// the GRANT that fixes it: absent schema, it may not create it; present,
// it may not use it. Granted what the finding says, it passes, and the
// store decides as that role.
func TestRoleWithoutPrivileges(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.admin(t, false)
	app := f.pool(t, f.noPriv, f.db)

	rep := Run(ctx, app)
	p := expect(
		t,
		rep,
		"permissions",
		StatusFailure,
		"role "+f.noPriv+" in database "+f.db+" may not create the schema ratewise",
		"GRANT CREATE ON DATABASE "+f.db+" TO "+f.noPriv,
	)
	if err := decide(app); err == nil {
		t.Errorf("the store decided as a role that may not create its schema, which the probe calls a failure: %v", p)
	}

	if err := storepostgres.New(admin).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rep = Run(ctx, app)
	expect(
		t,
		rep,
		"schema",
		StatusWarning,
		"ratewise exists, owned by ratewise; its version cannot be read as this role: ERROR: permission denied for "+
			"schema ratewise",
	)
	p = expect(
		t,
		rep,
		"permissions",
		StatusFailure,
		"lacks USAGE on the schema ratewise; SELECT, INSERT, UPDATE, DELETE on ratewise.state and ratewise.once; "+
			"SELECT on ratewise.meta",
		"as ratewise, the schema's owner: GRANT USAGE ON SCHEMA ratewise TO "+f.noPriv+"; GRANT SELECT, INSERT, "+
			"UPDATE, DELETE ON ratewise.state, ratewise.once TO "+f.noPriv,
	)
	if err := decide(app); err == nil {
		t.Errorf("the store decided as a role the probe says lacks privileges: %v", p)
	}

	// Some privileges held: only those lacking are named, each asked on
	// its own (has_table_privilege, given several, says whether any is).
	f.exec(
		t,
		admin,
		fmt.Sprintf(
			"GRANT USAGE ON SCHEMA ratewise TO %[1]s; GRANT SELECT ON ALL TABLES IN SCHEMA ratewise TO %[1]s",
			f.noPriv,
		),
	)
	p = expect(
		t,
		Run(ctx, app),
		"permissions",
		StatusFailure,
		"lacks INSERT, UPDATE, DELETE on ratewise.state and ratewise.once",
		"the schema's owner: GRANT INSERT, UPDATE, DELETE ON ratewise.state, ratewise.once TO "+f.noPriv,
	)
	if strings.Contains(p.Found, "USAGE") || strings.Contains(p.Found, "meta") {
		t.Errorf("privileges held are called lacking: %v", p)
	}

	// Functions run by anyone by default; revoked, they are named.
	f.exec(t, admin, "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA ratewise FROM PUBLIC")
	p = expect(
		t,
		Run(ctx, app),
		"permissions",
		StatusFailure,
		"EXECUTE on ",
		" of its ",
		"functions (ratewise.",
		"GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ratewise TO "+f.noPriv,
	)

	_, grants, _ := strings.Cut(p.Change, "the schema's owner: ")
	for _, g := range strings.Split(grants, "; ") {
		f.exec(t, admin, g)
	}
	rep = Run(ctx, app)
	expect(
		t,
		rep,
		"schema",
		StatusOK,
		fmt.Sprintf("ratewise at version %d, this store's, owned by ratewise", pgschema.Version),
	)
	expect(t, rep, "permissions", StatusOK, "may use the schema ratewise")
	if rep.Worst() != StatusOK {
		t.Errorf("after the grants: %v", rep.Findings)
	}
	if err := decide(app); err != nil {
		t.Errorf("the store fails as a role the probe passes: %v", err)
	}
}

// A schema at another version is reported: newer, the store refuses it;
// older, it migrates it on first use, which a role that does not own it
// may not, though it may use it.
func TestSchemaAtAnotherVersion(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	admin := f.admin(t, true)
	app := f.pool(t, f.noPriv, f.db)
	f.exec(
		t,
		admin,
		fmt.Sprintf(
			"GRANT USAGE ON SCHEMA ratewise TO %[1]s; GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "+
				"ratewise TO %[1]s",
			f.noPriv,
		),
	)
	expect(t, Run(ctx, app), "permissions", StatusOK, "may use the schema ratewise")

	// A newer schema that still serves this store's statements.
	f.exec(
		t,
		admin,
		fmt.Sprintf("UPDATE ratewise.meta SET version = %d, compatible = %d", pgschema.Version+1, pgschema.Version),
	)
	expect(
		t,
		Run(ctx, admin),
		"schema",
		StatusOK,
		fmt.Sprintf(
			"ratewise at version %d, newer than this store's %d, which it still serves",
			pgschema.Version+1,
			pgschema.Version,
		),
	)
	if err := decide(admin); err != nil {
		t.Errorf("the store refused a newer schema that serves it: %v", err)
	}

	f.exec(
		t,
		admin,
		fmt.Sprintf("UPDATE ratewise.meta SET version = %d, compatible = %d", pgschema.Version+1, pgschema.Version+1),
	)
	rep := Run(ctx, admin)
	expect(
		t,
		rep,
		"schema",
		StatusFailure,
		fmt.Sprintf(
			"ratewise at version %d, newer than this store's %d: the store refuses it",
			pgschema.Version+1,
			pgschema.Version,
		),
	)
	if err := decide(admin); err == nil {
		t.Error("the store decided on a newer schema, which the probe calls a failure")
	}

	f.exec(t, admin, "UPDATE ratewise.meta SET version = 0")
	expect(
		t,
		Run(ctx, admin),
		"schema",
		StatusWarning,
		fmt.Sprintf("ratewise at version 0, older than this store's %d: the store migrates it", pgschema.Version),
	)
	expect(t, Run(ctx, admin), "permissions", StatusOK, "and migrate it")
	p := expect(
		t,
		Run(ctx, app),
		"permissions",
		StatusFailure,
		"CREATE on the database, to migrate the schema; CREATE on the schema ratewise, to migrate it; ownership of ",
		"call storepostgres.Store.Migrate once as ratewise, the schema's owner",
	)
	if err := decide(app); err == nil {
		t.Errorf("the store migrated as a role the probe says may not: %v", p)
	}
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p, err := pgxpool.New(context.Background(), "postgres://app@"+addr+"/app?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rep := Run(context.Background(), p)
	if len(rep.Findings) != 1 || rep.Worst() != StatusFailure ||
		!strings.Contains(rep.Findings[0].Found, "unreachable: ") {
		t.Errorf("nothing listening: got %v, want one failure, unreachable", rep.Findings)
	}
}

// The store needs PostgreSQL 14; what this server is, a test cannot choose.
func TestVersionFinding(t *testing.T) {
	cases := []struct {
		num     int
		version string
		want    Status
	}{
		{130015, "13.15", StatusFailure},
		{140000, "14.0", StatusOK},
		{170002, "17.2 (Debian 17.2-1)", StatusOK},
	}
	for _, c := range cases {
		st, found, change := versionFinding(c.num, c.version)
		if st != c.want || !strings.HasPrefix(found, "PostgreSQL "+strings.Fields(c.version)[0]) ||
			(st == StatusFailure) != (change != "") {
			t.Errorf("%d %q: got %v %q, change %q; want %v", c.num, c.version, st, found, change, c.want)
		}
	}
}
