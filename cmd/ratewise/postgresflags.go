package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/replay"
)

// defaultConns is the size of a PostgreSQL pool whose URL gives none and
// whose command did not say: the 16 keys a run replays at once, and room
// for the store's sweeps and the measuring statements.
const defaultConns = 20

// postgresConfig reads --postgres: a URL (postgres://user:password@host:5432/db)
// or key=value settings, as pgxpool.ParseConfig takes them, with a pool of
// conns connections unless it sets pool_max_conns, and a connect timeout of
// defaultDialTimeout unless it sets connect_timeout. where is what errors
// and descriptions show of it: never the password.
func postgresConfig(s string, conns int) (cfg *pgxpool.Config, where string, err error) {
	if isURL(s) {
		if where, err = redactURL("--postgres", s); err != nil {
			return nil, "", err
		}
	}
	cfg, err = pgxpool.ParseConfig(s)
	if err != nil {
		var perr *pgconn.ParseConfigError
		if where != "" && errors.As(err, &perr) && perr.Unwrap() != nil {
			// pgx's message repeats the URL; where is it without the password.
			return nil, "", usagef("--postgres %s: %v", where, perr.Unwrap())
		}
		return nil, "", usagef("--postgres: %v", err) // pgx hides a password=
	}
	if where == "" {
		c := cfg.ConnConfig
		where = fmt.Sprintf("host=%s port=%d dbname=%s user=%s", c.Host, c.Port, c.Database, c.User)
	}
	if !strings.Contains(s, "pool_max_conns") {
		if conns <= 0 {
			conns = defaultConns
		}
		cfg.MaxConns = int32(conns)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = defaultDialTimeout
	}
	return cfg, where, nil
}

func dialPostgres(ctx context.Context, s string, conns int) (replay.Target, string, error) {
	cfg, where, err := postgresConfig(s, conns)
	if err != nil {
		return nil, "", err
	}
	p, err := replay.DialPostgres(ctx, cfg, where)
	if err != nil {
		return nil, "", err
	}
	return p, fmt.Sprintf("the PostgreSQL at %s (%s)", where, postgresVersion(ctx, p.Pool())), nil
}

func startPostgres(ctx context.Context, conns int) (replay.Target, string, error) {
	srv, err := pgtest.Start()
	if err != nil {
		return nil, "", fmt.Errorf("cannot start a throwaway PostgreSQL: %w", err)
	}
	cfg, _, err := postgresConfig(srv.URL, conns)
	if err != nil {
		srv.Stop()
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port)
	p, err := replay.DialPostgres(ctx, cfg, addr)
	if err != nil {
		srv.Stop()
		return nil, "", err
	}
	about := fmt.Sprintf(
		"a throwaway PostgreSQL started for this run (%s at %s, fsync off)",
		postgresVersion(ctx, p.Pool()),
		addr,
	)
	return &startedPostgres{Postgres: p, srv: srv}, about, nil
}

// postgresVersion is "PostgreSQL 16.4", or "PostgreSQL" when the server
// does not say.
func postgresVersion(ctx context.Context, pool *pgxpool.Pool) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var v string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err == nil && v != "" {
		return "PostgreSQL " + strings.Fields(v)[0]
	}
	return "PostgreSQL"
}

// startedPostgres is a PostgreSQL target on a server of our own, stopped
// with the target.
type startedPostgres struct {
	*replay.Postgres
	srv *pgtest.Server
}

func (s *startedPostgres) Close() {
	s.Postgres.Close()
	s.srv.Stop()
}
