package contract_test

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	contract "github.com/ratewise/ratewise/contract_test"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/internal/testkit/race"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storepostgres"
	"github.com/ratewise/ratewise/storeredis"
)

func TestMain(m *testing.M) {
	defer pgtest.StopShared()
	os.Exit(redistest.Main(m))
}

// TestContract runs the conformance suite against every store in the repo:
// storememory, a reference store, storeredis on miniredis, on real Redis
// and on a real Redis Cluster, and storepostgres, each in client-time mode
// (WithClientTime) and on the server's own clock, its default (the targets
// named -server-time): miniredis lets the suite drive that clock (see
// serverClock); on the real servers, the rules that hold at any time run,
// and the model checker with windows that real time moves. The real
// servers are started by the test on free loopback ports. The Redis and
// PostgreSQL targets run with coalescing (and Redis's deny cache) on, as
// by default, so the model checker's steps made at once share round trips
// (contract.Coalesced); the -plain ones and miniredis-server-time run with
// both off, on a sample (contract.Sampled), as does the cluster on its own
// clock, whose scripts the standalone server runs in full. The leased-
// targets run the memory, Redis and PostgreSQL stores under the leasing
// layer (contract.Leased). A new store is one more line here.
func TestContract(t *testing.T) {
	clientTime := []contract.Option{contract.ExpiryGrace(storecheck.ExpiryGrace), contract.Coalesced()}
	// Without coalescing and the deny cache, which are on by default.
	plain := []storeredis.Option{storeredis.WithCoalescing(0), storeredis.WithDenyCache(0)}
	// The memory stores' own clock: it stands still, so that no sweep
	// drops a state the suite's clock, which jumps ahead and back, still
	// finds counting however long the run takes in real time, but for the
	// model checker's idle gaps (contract.ExpiryFollows).
	memClock, leasedMemClock := newStoreClock(), newStoreClock()
	wrappedClock, leasedWrappedClock := newStoreClock(), newStoreClock()
	serverTime := newServerClock(t)
	targets := []struct {
		name string
		new  func(t *testing.T) store.Store
		opts []contract.Option
	}{
		{"storememory", func(*testing.T) store.Store {
			return storememory.New(storememory.WithClock(memClock))
		}, []contract.Option{contract.ExpiryFollows(memClock)}},
		// A store that wraps another, as a user's logging or metrics
		// layer does, passing every call on: it keeps every capability
		// (store.Store.Capabilities included), so it passes every rule,
		// and the leasing layer leases over it (leased-wrapped below). The
		// memory store under it runs every rule in full; a sample of the
		// heaviest work (Sampled) shows the wrapper changes nothing.
		{"wrapped", func(*testing.T) store.Store {
			return forwarding{storememory.New(storememory.WithClock(wrappedClock))}
		}, []contract.Option{contract.ExpiryFollows(wrappedClock), contract.Sampled()}},
		// Not a product: keeps state forever, so the algorithms are checked
		// without expiry covering for them.
		{"reference", func(*testing.T) store.Store { return contract.ReferenceStore() }, nil},
		// miniredis runs the scripts the Redis targets run, in an
		// interpreter many times slower under the race detector: a sample
		// of the heaviest work (Sampled), the real servers all of it.
		{"miniredis", func(t *testing.T) store.Store {
			return lossy(t, miniredis.RunT(t).Addr(), storeredis.WithClientTime())
		}, []contract.Option{contract.ExpiryGrace(storecheck.ExpiryGrace), contract.Sampled(), contract.Coalesced()}},
		{"miniredis-server-time", func(t *testing.T) store.Store {
			return serverTime
		}, []contract.Option{contract.Sampled()}},
		{"redis", func(t *testing.T) store.Store {
			return lossy(t, redistest.Standalone(t).Addr, storeredis.WithClientTime())
		}, clientTime},
		{"redis-server-time", func(t *testing.T) store.Store {
			return lossy(t, redistest.Standalone(t).Addr)
		}, []contract.Option{contract.StoreClock(), contract.Coalesced()}},
		{"cluster", func(t *testing.T) store.Store {
			return lossyCluster(t, storeredis.WithClientTime())
		}, clientTime},
		{"cluster-server-time", func(t *testing.T) store.Store {
			return lossyCluster(t)
		}, []contract.Option{contract.StoreClock(), contract.Coalesced(), contract.Sampled()}},
		// The client the README builds, storeredis.ClientOptions's, on
		// Redis's clock: go-redis sends each command once, so a lost reply
		// fails its call (LostRepliesFail), and the store keeps no record
		// of its writes. The budget is long enough for the race detector,
		// and the store's check of the client is held to it.
		{"redis-clientoptions", func(t *testing.T) store.Store {
			budget := 5 * time.Second
			o := storeredis.ClientOptions(&redis.Options{Addr: redistest.Standalone(t).Addr}, budget)
			return lossyWith(t, o, storeredis.WithWarnings(budget, nil))
		}, []contract.Option{contract.StoreClock(), contract.Coalesced(), contract.Sampled(), contract.LostRepliesFail()}},
		{"redis-plain", func(t *testing.T) store.Store {
			return lossy(t, redistest.Standalone(t).Addr, append(plain, storeredis.WithClientTime())...)
		}, []contract.Option{clientTime[0], contract.Sampled()}},
		{"cluster-plain", func(t *testing.T) store.Store {
			return lossyCluster(t, append(plain, storeredis.WithClientTime())...)
		}, []contract.Option{clientTime[0], contract.Sampled()}},
		// The leasing layer (contract.Leased) over the memory store, over
		// Redis and over PostgreSQL, each in client time, which leases
		// need. The layer is the same on each, and leased-storememory
		// checks it in full; on the servers, which take a round trip per
		// step, a sample of the heaviest work (Sampled) shows the stores
		// book and refund under it as the memory store does.
		{"leased-storememory", func(t *testing.T) store.Store {
			return storememory.New(storememory.WithClock(leasedMemClock))
		}, []contract.Option{contract.Leased()}},
		{"leased-wrapped", func(t *testing.T) store.Store {
			return forwarding{storememory.New(storememory.WithClock(leasedWrappedClock))}
		}, []contract.Option{contract.Leased(), contract.Sampled()}},
		{"leased-redis", func(t *testing.T) store.Store {
			return lossy(t, redistest.Standalone(t).Addr, storeredis.WithClientTime())
		}, append([]contract.Option{contract.Leased(), contract.Sampled()}, clientTime[:1]...)},
		{"leased-postgres", func(t *testing.T) store.Store {
			return storepostgres.New(pgPool(t), storepostgres.WithClientTime())
		}, []contract.Option{contract.Leased(), contract.Sampled(), contract.ExpiryGrace(storecheck.ExpiryGrace)}},
		// Through a proxy that can lose a statement's reply
		// (Run's LoseNextReply).
		{"postgres", func(t *testing.T) store.Store {
			return newPGStore(t, true, storepostgres.WithClientTime())
		}, []contract.Option{contract.ExpiryGrace(storecheck.ExpiryGrace), contract.Coalesced(), contract.LostRepliesFail()}},
		{"postgres-server-time", func(t *testing.T) store.Store {
			return newPGStore(t, false)
		}, []contract.Option{contract.StoreClock(), contract.Coalesced()}},
	}
	// go test -short runs every rule once on each kind of store: the
	// memory store, miniredis and one real Redis.
	short := map[string]bool{
		"storememory": true,
		"wrapped":     true,
		"reference":   true,
		"miniredis":   true,
		"redis":       true,
		"postgres":    true,
	}
	// The targets run side by side: most of their time is spent waiting
	// for round trips, and each subtest's keys are its own.
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			if testing.Short() && !short[target.name] {
				t.Skip("runs without -short")
			}
			if race.Enabled && strings.HasPrefix(target.name, "miniredis") {
				// Its Lua interpreter is the slowest target under the race
				// detector (about 100 s each); .ci/run runs both miniredis
				// targets without it, and the real Redis targets run the
				// same scripts under it.
				t.Skip("skipped under the race detector: runs without -race (.ci/run does)")
			}
			t.Parallel()
			contract.Run(t, target.new, target.opts...)
		})
	}
}

// storeClock is the clock a memory store's expiry follows
// (storememory.WithClock), which the model checker moves on over its idle
// gaps (Run's AdvanceExpiry).
type storeClock struct{ *ratewisetest.Clock }

func newStoreClock() storeClock {
	return storeClock{ratewisetest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

func (c storeClock) AdvanceExpiry(d time.Duration) { c.Advance(d) }

// serverClock is the Redis store in its default mode, deciding on the
// server's clock (TIME), on a miniredis whose clock it sets to the now of
// each decision, so that the suite drives the server's time. Decisions are
// serialised so that each sees its own now; a now out of range is refused,
// as no server clock reads one. Its keys expire on a clock of miniredis's
// own, which the model checker moves on over its idle gaps
// (Run's AdvanceExpiry). One serves every rule of its target, each in
// keys of its own.
type serverClock struct {
	*storeredis.Store
	m  *miniredis.Miniredis
	mu sync.Mutex
}

func newServerClock(t *testing.T) *serverClock {
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	// Plain: the deny cache counts on the local monotonic clock, which
	// runs with Redis's own, and this target jumps Redis's clock instead;
	// and serverClock sends one decision at a time, so coalescing would
	// send each alone all the same.
	plain := []storeredis.Option{storeredis.WithCoalescing(0), storeredis.WithDenyCache(0)}
	return &serverClock{Store: storeredis.New(client(t, m.Addr()), plain...), m: m}
}

// Capabilities: the Redis store decides on the server's clock, which this
// harness sets to the now of each decision, so that to the suite it
// decides at the now it is given.
func (s *serverClock) Capabilities() store.Capabilities {
	c := s.Store.Capabilities()
	c.OwnClock = false
	return c
}

// TTL reports the key's time to live in miniredis (see redisStore.TTL).
func (s *serverClock) TTL(
	_ context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	_ time.Time,
) (time.Duration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.Key(k.String(), alg)
	switch {
	case !s.m.Exists(key):
		return 0, nil
	case s.m.TTL(key) == 0:
		return time.Duration(1<<63 - 1), nil // no expiry
	}
	return s.m.TTL(key), nil
}

func (s *serverClock) AdvanceExpiry(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.FastForward(d)
}

func (s *serverClock) Decide(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	now = storecheck.Now(now) // the zero now is the system clock's (store.Store)
	key := sk.String()
	if err := algo.CheckTime(now); err != nil {
		return algorithms.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.SetTime(now)
	return s.Store.Decide(ctx, store.Key{Name: key}, alg, now.Add(-time.Hour), cost) // the store must ignore now
}

func (s *serverClock) DecideSet(
	ctx context.Context,
	sk store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	now = storecheck.Now(now) // the zero now is the system clock's (store.Store)
	key := sk.String()
	if err := algo.CheckTime(now); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.SetTime(now)
	return s.Store.DecideSet(ctx, store.Key{Name: key}, algs, now.Add(-time.Hour), cost) // the store must ignore now
}

func (s *serverClock) Refund(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	now = storecheck.Now(now) // the zero now is the system clock's (store.Store)
	key := sk.String()
	if err := algo.CheckTime(now); err != nil {
		return algorithms.Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.SetTime(now)
	return s.Store.Refund(ctx, store.Key{Name: key}, alg, now.Add(-time.Hour), at, n) // the store must ignore now
}

func (s *serverClock) Reserve(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now) // the zero now is the system clock's (store.Store)
	key := sk.String()
	if err := algo.CheckTime(now); err != nil {
		return algorithms.Result{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.SetTime(now)
	return s.Store.Reserve(
		ctx,
		store.Key{Name: key},
		alg,
		now.Add(-time.Hour),
		cost,
		maxWait,
	) // the store must ignore now
}

func (s *serverClock) Lease(
	ctx context.Context,
	sk store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = storecheck.Now(now) // the zero now is the system clock's (store.Store)
	key := sk.String()
	if err := algo.CheckTime(now); err != nil {
		return algorithms.Result{}, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m.SetTime(now)
	return s.Store.Lease(
		ctx,
		store.Key{Name: key},
		alg,
		now.Add(-time.Hour),
		cost,
		maxWait,
	) // the store must ignore now
}

// redisStore is the Redis store with its client, which poisons a key
// (Run's Poison) by writing a stream where its state goes: every
// script that reads it fails with WRONGTYPE.
type redisStore struct {
	*storeredis.Store
	c redis.Cmdable
}

// TTL reports the state's time to live in Redis (the suite's state_expiry
// and refund rules read it): PTTL's, 0 for no key, and forever for a key
// without expiry, which breaks the store's contract. A value that records
// its writers (storeredis's writers.go) lives as long as its records, and
// says when its state expires: in ms on Redis's clock, the 7 bytes after
// the byte 255 and the records' count.
func (s *redisStore) TTL(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	_ time.Time,
) (time.Duration, error) {
	key := s.Key(k.String(), alg)
	v, err := s.c.Get(ctx, key).Result()
	if err != nil || len(v) < 10 || v[0] != 255 {
		return pttl(s.c.PTTL(ctx, key).Result())
	}
	var expires int64
	for _, b := range []byte(v[3:10]) {
		expires = expires<<8 | int64(b)
	}
	if expires == 0 {
		return 0, nil // records alone, no state
	}
	now, err := s.c.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	return max(time.Duration(expires)*time.Millisecond-time.Duration(now.UnixNano()), 0), nil
}

// pttl reads PTTL's reply: -2 (as go-redis returns it, in nanoseconds) for
// no key, and -1 for a key without expiry.
func pttl(d time.Duration, err error) (time.Duration, error) {
	switch {
	case err != nil:
		return 0, err
	case d == -2:
		return 0, nil
	case d < 0:
		return time.Duration(1<<63 - 1), nil
	}
	return d, nil
}

func (s *redisStore) Poison(t *testing.T, k store.Key, alg algorithms.Algorithm) (heal func()) {
	ctx := context.Background()
	rkey := s.Key(k.String(), alg)
	if err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: rkey, Values: []any{"poison", 1}}).Err(); err != nil {
		t.Fatalf("poisoning %q: %v", rkey, err)
	}
	return func() { s.c.Del(ctx, rkey) }
}

// lossyStore is the Redis store on a client whose connections can lose a
// reply (Run's LoseNextReply): go-redis's defaults, which resend.
type lossyStore struct {
	redisStore
	d      *redistest.Dropper
	before int64
}

func (s *lossyStore) LoseNextReply() {
	s.before = s.d.Dropped()
	s.d.Arm(nil, "evalsha", "eval")
}

func (s *lossyStore) KeepReplies() bool {
	s.d.Arm(nil)
	return s.d.Dropped() > s.before
}

// lossy returns a lossyStore on a go-redis client with its default
// settings, but for no backoff before a resend, which would only slow the
// suite (TestEveryWriteAppliedOnce in storeredis keeps every default).
func lossy(t *testing.T, addr string, opts ...storeredis.Option) *lossyStore {
	return lossyWith(t, &redis.Options{Addr: addr, MinRetryBackoff: -1, MaxRetryBackoff: -1}, opts...)
}

// lossyWith is lossy on a Client with o, but for its Dialer.
func lossyWith(t *testing.T, o *redis.Options, opts ...storeredis.Option) *lossyStore {
	d := new(redistest.Dropper)
	o.Dialer = d.Dial
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return &lossyStore{redisStore: redisStore{storeredis.New(c, opts...), c}, d: d}
}

// lossyCluster returns a lossyStore on a ClusterClient of the shared
// cluster with its default settings, but for no backoff before a resend.
func lossyCluster(t *testing.T, opts ...storeredis.Option) *lossyStore {
	d := new(redistest.Dropper)
	c := redis.NewClusterClient(
		&redis.ClusterOptions{
			Addrs:           redistest.SharedCluster(t).Addrs(),
			Dialer:          d.Dial,
			MinRetryBackoff: -1,
			MaxRetryBackoff: -1,
		},
	)
	t.Cleanup(func() { c.Close() })
	return &lossyStore{redisStore: redisStore{storeredis.New(c, opts...), c}, d: d}
}

// pgStore is the PostgreSQL store with its pool, which poisons a key
// (Run's Poison) by holding its row locked in a transaction of its
// own: a decision on it waits for its caller's deadline, out of any batch
// after the batch's lock timeout.
type pgStore struct {
	*storepostgres.Store
	pool *pgxpool.Pool
}

// newPGStore returns a pgStore, on a pool through a proxy that can lose a
// statement's reply if lossy (Run's LoseNextReply).
func newPGStore(t *testing.T, lossy bool, opts ...storepostgres.Option) store.Store {
	pool := pgPool(t)
	var proxy *pgtest.Proxy
	if lossy {
		srv := pgtest.Shared(t)
		proxy = pgtest.NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
		var err error
		if pool, err = pgxpool.New(context.Background(), proxy.URL(srv.URL)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
	}
	s := storepostgres.New(pool, opts...)
	t.Cleanup(func() { s.Close() })
	if lossy {
		return &lossyPGStore{pgStore{s, pool}, proxy}
	}
	return &pgStore{s, pool}
}

// lossyPGStore is a pgStore through a proxy that loses the reply to the
// next statement of the store's that decides (Run's LoseNextReply).
type lossyPGStore struct {
	pgStore
	proxy *pgtest.Proxy
}

func (s *lossyPGStore) LoseNextReply() {
	// A decision, a batch, or a driver's call: not a sweep, nor a
	// reading of the schema's version.
	s.proxy.LoseNext("INSERT INTO ratewise.state AS s", "SELECT ratewise.", "SELECT * FROM ratewise.")
}

func (s *lossyPGStore) KeepReplies() bool { return s.proxy.Disarm() }

func (s *pgStore) Poison(t *testing.T, k store.Key, alg algorithms.Algorithm) (heal func()) {
	ctx := context.Background()
	// An inspection writes the row (its result), which the lock then holds.
	if _, err := s.Decide(ctx, k, alg, time.Now(), 0); err != nil {
		t.Fatalf("poisoning %v: %v", k, err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatalf("poisoning %v: %v", k, err)
	}
	var locked int
	if err := tx.QueryRow(ctx, `WITH l AS (SELECT 1 FROM ratewise.state WHERE position($1::bytea IN key) > 0 FOR UPDATE)
		SELECT count(*) FROM l`, []byte(k.String())).Scan(&locked); err != nil || locked == 0 {
		t.Fatalf("poisoning %v: %d rows locked, %v", k, locked, err)
	}
	return func() { _ = tx.Rollback(ctx) }
}

// pgPool returns a pool on the package's PostgreSQL server, which the
// tests start on a free port (internal/testkit/pgtest) and share.
func pgPool(t *testing.T) *pgxpool.Pool {
	pgtest.Require(t)
	p, err := pgxpool.New(context.Background(), pgtest.Shared(t).URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// forwarding is a store that wraps another and passes every call on, as a
// user's logging or metrics layer would: written out method by method, not
// embedded, so that a method the interface gains and it does not forward
// fails to compile here.
type forwarding struct{ inner store.Store }

func (f forwarding) Decide(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	return f.inner.Decide(ctx, k, alg, now, cost)
}

func (f forwarding) DecideSet(
	ctx context.Context,
	k store.Key,
	algs []algorithms.Algorithm,
	now time.Time,
	cost int64,
) ([]algorithms.Result, error) {
	return f.inner.DecideSet(ctx, k, algs, now, cost)
}

func (f forwarding) Reserve(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return f.inner.Reserve(ctx, k, alg, now, cost, maxWait)
}

func (f forwarding) Refund(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now, at time.Time,
	n int64,
) (algorithms.Result, error) {
	return f.inner.Refund(ctx, k, alg, now, at, n)
}

func (f forwarding) Lease(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	return f.inner.Lease(ctx, k, alg, now, cost, maxWait)
}

func (f forwarding) Reset(ctx context.Context, k store.Key, alg algorithms.Algorithm) error {
	return f.inner.Reset(ctx, k, alg)
}

func (f forwarding) Capabilities() store.Capabilities { return f.inner.Capabilities() }
