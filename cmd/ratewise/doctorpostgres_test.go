package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/storepostgres"
)

// doctor --postgres prints a row per check, as for Redis: a database the
// store can use exits 0; a role without privileges, a schema at another
// version and a server that does not answer exit 1, each with what to
// change.
func TestDoctorPostgres(t *testing.T) {
	srv := pgtest.Shared(t)
	ctx := context.Background()
	id := make([]byte, 4)
	rand.Read(id)
	suffix := hex.EncodeToString(id)
	url := func(role, db string) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", role, srv.Port, db)
	}
	admin, err := pgxpool.New(ctx, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	good, newer, app := "doctor_good_"+suffix, "doctor_newer_"+suffix, "doctor_app_"+suffix
	for _, sql := range []string{"CREATE DATABASE " + good, "CREATE DATABASE " + newer, "CREATE ROLE " + app + " LOGIN"} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for _, db := range []string{good, newer} {
		p, err := pgxpool.New(ctx, url("ratewise", db))
		if err != nil {
			t.Fatal(err)
		}
		err = storepostgres.New(p).Migrate(ctx)
		if err == nil && db == newer {
			_, err = p.Exec(
				ctx,
				"UPDATE ratewise.meta SET version = version + 1, compatible = version + 1",
			) // a newer schema that no longer serves this version
		}
		p.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()

	cases := []struct {
		name string
		url  string
		code int
		says []any
	}{
		{"good", url("ratewise", good), 0, []any{
			"Checked the PostgreSQL at " + url("ratewise", good) + " for ratewise's PostgreSQL store",
			row(
				"server",
				"ok",
				"PostgreSQL ",
			), row("schema", "ok", "ratewise at version "),
			row("permissions", "ok", "role ratewise in database "+good+" may use"),
			"the URL your app connects with", "no failure, no warning.",
		}},
		{"role without privileges", url(app, good), 1, []any{
			row("schema", "warning", "ratewise exists, owned by ratewise; its version cannot be read as this role"),
			row(
				"permissions",
				"failure",
				"role "+app+" in database ",
			), "in database " + good + " lacks USAGE on the schema ratewise;",
			"change: as ratewise, the schema's owner: GRANT USAGE ON SCHEMA ratewise TO " + app, "1 failure, 1 warning.",
		}},
		{"schema at another version", url("ratewise", newer), 1, []any{
			row("schema", "failure", "ratewise at version "), "newer than this store's", "1 failure, no warning.",
		}},
		{"unreachable", "postgres://ratewise@" + closed + "/db?connect_timeout=2", 1, []any{
			row("server", "failure", "unreachable: "), "1 failure, no warning.",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "doctor", "--postgres", c.url)
			if code != c.code || stderr != "" {
				t.Errorf("exit %d, stderr %q; want exit %d, nothing on stderr", code, stderr, c.code)
			}
			// Phrases may wrap; rows start on a line of their own.
			text := strings.Join(strings.Fields(stdout), " ")
			for _, want := range c.says {
				switch w := want.(type) {
				case string:
					if !strings.Contains(text, w) {
						t.Errorf("output does not say %q:\n%s", w, stdout)
					}
				case interface{ MatchString(string) bool }:
					if !w.MatchString(stdout) {
						t.Errorf("output has no row matching %v:\n%s", w, stdout)
					}
				}
			}
			for _, line := range strings.Split(stdout, "\n") {
				if len([]rune(line)) > doctorWidth {
					t.Errorf("line wider than %d: %q", doctorWidth, line)
				}
			}
		})
	}
}
