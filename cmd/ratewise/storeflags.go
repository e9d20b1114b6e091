package main

import (
	"context"
	"flag"
	"strings"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/replay"
)

// storeUse is what a command does with the store storeFlags choose, which
// decides its flags and the in-process store it falls back on.
type storeUse int

const (
	// forCompare runs the in-memory store and a second store beside it:
	// a Redis, a PostgreSQL, or the embedded miniredis; --memory-store runs
	// the in-memory store alone.
	forCompare storeUse = iota
	// forRecommend measures one store: a Redis, a PostgreSQL, or the
	// in-memory store.
	forRecommend
	// forGuide runs compare and recommend's examples on a Redis, or on
	// guide's own in-process stores, for which open returns nil. It takes
	// no PostgreSQL: the guide it writes is about Redis.
	forGuide
)

// storeFlags choose the store a command measures: a Redis at an address or
// URL, a cluster, a throwaway redis-server the command starts itself, a
// PostgreSQL database or a throwaway PostgreSQL, or an in-process store.
// With none of them, the command starts a redis-server when one is on the
// PATH, and falls back on an in-process store when not.
type storeFlags struct {
	addr, cluster, postgres  string
	start, memory, miniredis bool
	startPostgres            bool
	use                      storeUse
	// conns is the size of a PostgreSQL pool whose URL gives none
	// (pool_max_conns): enough for the command's concurrent callers.
	conns int
	// names are the flags registered, in the order the usage lists them.
	names []string
}

func (f *storeFlags) register(fs *flag.FlagSet, what string, use storeUse) {
	f.use = use
	f.names = []string{"redis", "cluster", "start-redis"}
	fs.StringVar(
		&f.addr,
		"redis",
		"",
		what+" on the Redis at this address: host:port, or a URL such as redis://user:password@host:6379/0 "+
			"(rediss:// for TLS)",
	)
	fs.StringVar(
		&f.cluster,
		"cluster",
		"",
		what+" on the Redis Cluster with these comma-separated seed addresses (host:port), or at a URL such as "+
			"redis://user:password@host:6379?addr=host2:6379",
	)
	fs.BoolVar(
		&f.start,
		"start-redis",
		false,
		what+" on a throwaway redis-server started on a free loopback port and stopped at exit; the default when "+
			"redis-server is on the PATH",
	)
	if use != forGuide {
		f.names = append(f.names, "postgres", "start-postgres")
		fs.StringVar(
			&f.postgres,
			"postgres",
			"",
			what+" on the PostgreSQL store in this database, a URL such as "+
				"postgres://user:password@host:5432/db?sslmode=require "+
				"(or key=value settings, as pgx takes them); it creates the schema ratewise if it is missing, and "+
				"deletes the keys it writes",
		)
		fs.BoolVar(
			&f.startPostgres,
			"start-postgres",
			false,
			what+" on the PostgreSQL store in a throwaway PostgreSQL server (initdb and postgres from the PATH or "+
				"/usr/lib/postgresql) started on a free loopback port and stopped at exit",
		)
	}
	switch use {
	case forCompare:
		f.names = append(f.names, "memory-store", "miniredis")
		fs.BoolVar(&f.memory, "memory-store", false, "run the in-memory store alone")
		fs.BoolVar(
			&f.miniredis,
			"miniredis",
			false,
			"run the embedded miniredis beside the in-memory store, even when redis-server is on the PATH; the "+
				"default when it is not",
		)
	case forRecommend:
		f.names = append(f.names, "memory-store")
		fs.BoolVar(
			&f.memory,
			"memory-store",
			false,
			"measure the in-memory store's Go heap, even when redis-server is on the PATH; the default when it is not",
		)
	case forGuide:
		f.names = append(f.names, "miniredis")
		fs.BoolVar(
			&f.miniredis,
			"miniredis",
			false,
			"run compare on the in-memory store and the embedded miniredis, and recommend's examples on the in-memory "+
				"store, even when redis-server is on the PATH; the default when it is not",
		)
	}
}

// open returns the store the flags choose and describes it, as a phrase
// that follows "measured on", for the command's output. For guide, the
// target is nil when guide is to use its own in-process stores.
func (f *storeFlags) open(ctx context.Context) (replay.Target, string, error) {
	set := map[string]bool{"redis": f.addr != "", "cluster": f.cluster != "", "start-redis": f.start,
		"postgres": f.postgres != "", "start-postgres": f.startPostgres, "memory-store": f.memory, "miniredis": f.miniredis}
	var chosen []string
	for _, n := range f.names {
		if set[n] {
			chosen = append(chosen, "--"+n)
		}
	}
	if len(chosen) > 1 {
		return nil, "", usagef("%s: give only one of %s", strings.Join(chosen, " and "), orList(f.names))
	}
	switch {
	case f.addr != "":
		return dialRedis(ctx, f.addr)
	case f.cluster != "":
		return dialCluster(ctx, f.cluster)
	case f.start:
		return startRedis(ctx)
	case f.postgres != "":
		return dialPostgres(ctx, f.postgres, f.conns)
	case f.startPostgres:
		return startPostgres(ctx, f.conns)
	case f.memory:
		t, about := f.inProcess("--memory-store")
		return t, about, nil
	case f.miniredis:
		t, about := f.inProcess("--miniredis")
		return t, about, nil
	}
	if _, err := redistest.Binary(); err == nil {
		return startRedis(ctx)
	}
	t, about := f.inProcess("redis-server not found on PATH; install it, or give --redis, to measure Redis")
	return t, about, nil
}

// inProcess is the in-process store the command falls back on, and its
// description, which says how it differs from Redis; why says why it is
// used.
func (f *storeFlags) inProcess(why string) (replay.Target, string) {
	switch {
	case f.use == forCompare && f.memory:
		return replay.Memory{}, "the in-memory store alone (" + why + ")"
	case f.use == forCompare:
		return replay.Miniredis{}, "the embedded miniredis (" + why + "), not Redis: it runs the same Lua scripts, " +
			"but its memory is not Redis's and its speed is no guide to Redis's"
	case f.use == forRecommend:
		return replay.Memory{}, "the in-memory store's Go heap (" + why + "), not Redis, where a sorted-set record " +
			"costs several times more"
	}
	return nil, "the in-memory store and the embedded miniredis (" + why + "), not Redis: miniredis runs the " +
		"same Lua scripts, " +
		"but its memory is not Redis's and its speed is no guide to Redis's"
}

// orList lists flag names as "--a, --b or --c".
func orList(names []string) string {
	flags := make([]string, len(names))
	for i, n := range names {
		flags[i] = "--" + n
	}
	if len(flags) < 2 {
		return strings.Join(flags, "")
	}
	return strings.Join(flags[:len(flags)-1], ", ") + " or " + flags[len(flags)-1]
}
