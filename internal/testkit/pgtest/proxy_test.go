//go:build unix

// Built on unix only, as pgtest_test.go is, whose TestMain stops the
// shared server.

package pgtest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// proxied returns the shared server and a proxy to it.
func proxied(t *testing.T) (*Server, *Proxy) {
	t.Helper()
	srv := Shared(t)
	return srv, NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
}

// connect opens a connection to url, closed when t ends.
func connect(t *testing.T, url string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// testTable creates a table of one int column, named for the test so
// tests can share the server, dropped when t ends.
func testTable(t *testing.T, srv *Server) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "_", "=", "_").Replace("t_" + t.Name()))
	conn := connect(t, srv.URL, pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, fmt.Sprintf("DROP TABLE IF EXISTS %s; CREATE TABLE %[1]s (v int)", name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c := connect(t, srv.URL, pgx.QueryExecModeSimpleProtocol)
		c.Exec(context.Background(), "DROP TABLE IF EXISTS "+name)
	})
	return name
}

// execModes are pgx's ways to run a statement: each names its statements
// and portals differently, or sends a simple Query.
var execModes = []struct {
	name string
	mode pgx.QueryExecMode
}{
	{"mode=cache_statement", pgx.QueryExecModeCacheStatement},
	{"mode=cache_describe", pgx.QueryExecModeCacheDescribe},
	{"mode=describe_exec", pgx.QueryExecModeDescribeExec},
	{"mode=exec", pgx.QueryExecModeExec},
	{"mode=simple_protocol", pgx.QueryExecModeSimpleProtocol},
}

// Queries pass through, and a statement prepared once and executed many
// times on one connection is counted at each execution.
func TestProxyPassesQueries(t *testing.T) {
	srv, p := proxied(t)
	for _, m := range execModes {
		t.Run(m.name, func(t *testing.T) {
			table := testTable(t, srv)
			conn := connect(t, p.URL(srv.URL), m.mode)
			ctx := context.Background()
			insert := fmt.Sprintf("INSERT INTO %s VALUES ($1) -- %s insert", table, m.name)
			const n = 50
			for i := range n {
				if _, err := conn.Exec(ctx, insert, i); err != nil {
					t.Fatal(err)
				}
			}
			var count, sum int
			err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*), sum(v) FROM %s", table)).Scan(&count, &sum)
			if err != nil {
				t.Fatal(err)
			}
			if count != n || sum != n*(n-1)/2 {
				t.Fatalf("count %d, sum %d; want %d, %d", count, sum, n, n*(n-1)/2)
			}
			if got, want := p.Executed(m.name+" insert"), int64(n); got != want {
				t.Fatalf("Executed: got %d, want %d", got, want)
			}
		})
	}
}

// A batch is pipelined: several exchanges are sent before their replies.
func TestProxyPassesBatches(t *testing.T) {
	srv, p := proxied(t)
	conn := connect(t, p.URL(srv.URL), pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	for range 3 {
		b := &pgx.Batch{}
		for i := range 20 {
			b.Queue("SELECT $1::int -- batched", i)
		}
		br := conn.SendBatch(ctx, b)
		for i := range 20 {
			var got int
			if err := br.QueryRow().Scan(&got); err != nil || got != i {
				t.Fatalf("row %d: got %d, %v", i, got, err)
			}
		}
		if err := br.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := p.Executed("-- batched"), int64(60); got != want {
		t.Fatalf("Executed: got %d, want %d", got, want)
	}
	if got := p.Executed("no such statement"); got != 0 {
		t.Fatalf("Executed of a statement never run: got %d, want 0", got)
	}
}

// LoseNext loses the reply to the next matching statement after the
// server ran it, once, and lets other statements pass while armed.
func TestProxyLosesReply(t *testing.T) {
	srv, p := proxied(t)
	for _, m := range execModes {
		t.Run(m.name, func(t *testing.T) {
			table := testTable(t, srv)
			conn := connect(t, p.URL(srv.URL), m.mode)
			ctx := context.Background()
			insert := fmt.Sprintf("INSERT INTO %s VALUES ($1) -- marker", table)
			// Run once first, so the armed execution Binds a statement
			// prepared in an earlier exchange.
			if _, err := conn.Exec(ctx, insert, 1); err != nil {
				t.Fatal(err)
			}
			lostBefore := p.Lost()
			p.LoseNext("marker")
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
				t.Fatalf("a statement that does not match failed while armed: %v", err)
			}
			_, err := conn.Exec(ctx, insert, 2)
			if err == nil {
				t.Fatal("the armed statement succeeded")
			}
			// pgx v5.12 returns io.ErrUnexpectedEOF, except for a simple
			// Query, where it returns "conn closed", which SafeToRetry
			// calls safe to retry although the statement ran.
			t.Logf("pgx's error for the lost reply: %v (SafeToRetry: %v)", err, pgconn.SafeToRetry(err))
			if !conn.IsClosed() {
				t.Fatal("the connection whose reply was lost is open")
			}
			if !p.Disarm() {
				t.Fatal("Disarm reports no reply lost")
			}
			if got, want := p.Lost(), lostBefore+1; got != want {
				t.Fatalf("Lost: got %d, want %d", got, want)
			}
			direct := connect(t, srv.URL, pgx.QueryExecModeSimpleProtocol)
			if err := direct.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE v = 2", table)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("rows of the statement whose reply was lost: got %d, want 1 (it ran and committed)", n)
			}

			// One reply per arming: the next one passes.
			p.LoseNext("marker")
			p.Disarm()
			again := connect(t, p.URL(srv.URL), m.mode)
			if _, err := again.Exec(ctx, insert, 3); err != nil {
				t.Fatalf("after Disarm: %v", err)
			}
			p.LoseNext("marker")
			if _, err := again.Exec(ctx, insert, 4); err == nil {
				t.Fatal("the armed statement succeeded, on a connection opened before LoseNext")
			}
			if _, err := connect(t, p.URL(srv.URL), m.mode).Exec(ctx, insert, 5); err != nil {
				t.Fatalf("the statement after the lost one: %v", err)
			}
			if p.Disarm() != true {
				t.Fatal("Disarm reports no reply lost")
			}
		})
	}
}

// A pool retires the connection whose reply was lost and opens another.
func TestProxyLosesReplyThroughPool(t *testing.T) {
	srv, p := proxied(t)
	table := testTable(t, srv)
	pool, err := pgxpool.New(context.Background(), p.URL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ctx := context.Background()
	insert := fmt.Sprintf("INSERT INTO %s VALUES ($1) -- marker", table)
	p.LoseNext("marker")
	if _, err := pool.Exec(ctx, insert, 1); err == nil {
		t.Fatal("the armed statement succeeded")
	}
	if !p.Disarm() {
		t.Fatal("Disarm reports no reply lost")
	}
	if _, err := pool.Exec(ctx, insert, 2); err != nil {
		t.Fatalf("the pool after a lost reply: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows: got %d, %v; want 2", n, err)
	}
}

// A stalled proxy holds queries until their deadline, and connections
// opened while stalled too; after Resume, new queries succeed.
func TestProxyStall(t *testing.T) {
	srv, p := proxied(t)
	pool, err := pgxpool.New(context.Background(), p.URL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}

	p.Stall()
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"open connection", func(ctx context.Context) error {
			_, err := pool.Exec(ctx, "SELECT 1 -- stalled")
			return err
		}},
		{"new connection", func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, p.URL(srv.URL))
			if err == nil {
				conn.Close(context.Background())
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const timeout = 300 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			err := tc.run(ctx)
			took := time.Since(start)
			t.Logf("pgx's error when stalled: %v (after %v)", err, took.Round(time.Millisecond))
			if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) {
				t.Fatalf("got %v, want the context's deadline", err)
			}
			if took < timeout || took > 5*time.Second {
				t.Fatalf("failed after %v, want its deadline, %v", took, timeout)
			}
		})
	}
	if got := p.Executed("-- stalled"); got != 0 {
		t.Fatalf("Executed while stalled: got %d, want 0", got)
	}

	p.Resume()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var one int
	if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("after Resume: got %d, %v", one, err)
	}
	// pgx gave the stalled connection up, and the pool opened another.
	t.Logf("pool after Resume: %d connections, %d opened in all", pool.Stat().TotalConns(), pool.Stat().NewConnsCount())

	// Held, not dropped: pgx closes a timed-out connection only once its
	// CancelRequest, held too, is answered, so the statement whose
	// deadline passed reaches the server after Resume, as it would when a
	// network comes back.
	for p.Executed("-- stalled") == 0 {
		if ctx.Err() != nil {
			t.Fatal("the statement held while stalled never reached the server")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A CancelRequest, sent on a connection of its own, reaches the server
// through the proxy.
func TestProxyForwardsCancelRequest(t *testing.T) {
	srv, p := proxied(t)
	cfg, err := pgx.ParseConfig(p.URL(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 10 * time.Second}
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = conn.Exec(ctx, "SELECT pg_sleep(30)")
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57014" { // query_canceled
		t.Fatalf("got %v after %v, want the server's query_canceled", err, time.Since(start))
	}
	if err := conn.Ping(context.Background()); err != nil {
		t.Fatalf("the connection after a cancelled query: %v", err)
	}
}

// A message the proxy cannot read closes that connection, and only it.
func TestProxyMalformedInput(t *testing.T) {
	srv, p := proxied(t)
	startup := startupMessage("ratewise", "ratewise")
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"startup length too short", []byte{0, 0, 0, 3, 0, 0, 0, 0}},
		{"startup length too long", []byte{0x7f, 0, 0, 0, 0, 3, 0, 0}},
		{"unknown startup code", []byte{0, 0, 0, 8, 0, 9, 0, 0}},
		{"message length too short", append(startup, 'Q', 0, 0, 0, 2)},
		{"message length negative", append(startup, 'Q', 0xff, 0xff, 0xff, 0xff)},
		{"unterminated query", append(startup, 'Q', 0, 0, 0, 6, 'a', 'b')},
		{"unterminated parse", append(startup, 'P', 0, 0, 0, 6, 'a', 'b')},
		{"empty close", append(startup, 'C', 0, 0, 0, 4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.Write(tc.bytes); err != nil {
				t.Fatal(err)
			}
			if err := waitClosed(c); err != nil {
				t.Fatal(err)
			}
		})
	}
	conn := connect(t, p.URL(srv.URL), pgx.QueryExecModeCacheStatement)
	if err := conn.Ping(context.Background()); err != nil {
		t.Fatalf("a connection after the malformed ones: %v", err)
	}
}

// waitClosed reads c until the proxy closes it, with a FIN or, when it left
// bytes unread, a reset. The server may answer a startup before the proxy
// reads what follows it, so bytes may come first.
func waitClosed(c net.Conn) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("the proxy did not close the connection")
	}
	return nil
}

// startupMessage is a protocol 3.0 StartupMessage.
func startupMessage(user, database string) []byte {
	body := []byte{0, 3, 0, 0}
	for _, s := range []string{"user", user, "database", database} {
		body = append(append(body, s...), 0)
	}
	body = append(body, 0)
	return append(binary.BigEndian.AppendUint32(nil, uint32(4+len(body))), body...)
}

// When the test ends, the proxy closes its connections, stalled ones
// included, and no goroutine of it is left.
func TestProxyClosesCleanly(t *testing.T) {
	srv := Shared(t)
	var addr string
	var clients []net.Conn
	t.Run("proxy", func(t *testing.T) {
		p := NewProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.Port)))
		addr = p.Addr()
		conn := connect(t, p.URL(srv.URL), pgx.QueryExecModeCacheStatement)
		if err := conn.Ping(context.Background()); err != nil {
			t.Fatal(err)
		}
		p.Stall()
		for range 3 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Write(startupMessage("ratewise", "ratewise"))
			clients = append(clients, c)
		}
	})
	for i, c := range clients {
		if err := waitClosed(c); err != nil {
			t.Errorf("connection %d after the proxy stopped: %v", i, err)
		}
		c.Close()
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the proxy still accepts connections after the test")
	}
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	if strings.Contains(stacks, "pgtest.(*Proxy)") {
		t.Fatalf("a proxy goroutine is left:\n%s", stacks)
	}
}
