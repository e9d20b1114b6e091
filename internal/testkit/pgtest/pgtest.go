// Package pgtest starts throwaway PostgreSQL servers for tests and
// benchmarks: initdb in a temporary directory, then postgres on a free
// loopback port, with fsync off, since nothing it holds outlives the test.
// It never connects to a server it did not start, and it stops only the
// processes it started, by PID. On Linux the server is also killed if the
// test process dies (the parent-death signal).
//
// initdb refuses to run as root, so under root the server runs as the
// unprivileged user "postgres", or "nobody" where there is none, and its
// directory is handed to that user.
//
// A test package shares one server through Shared, and stops it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// When PostgreSQL is not installed, Require skips the calling test with a
// loud message, or fails it when CI=true.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ratewise/ratewise/internal/testkit/testserver"
)

// Server is one postgres process this package started.
type Server struct {
	// URL connects to the server's database "ratewise" as the superuser
	// "ratewise", with no password (trust on loopback only).
	URL  string
	Port int
	cmd  *exec.Cmd
	dir  string
	done chan struct{}

	postgres, data string // to start it again (Restart)
	owner          *owner
}

// Binaries returns the paths of initdb and postgres: from PATH, or from
// Debian's /usr/lib/postgresql/<version>/bin, the newest version first.
func Binaries() (initdb, postgres string, err error) {
	if i, err1 := exec.LookPath("initdb"); err1 == nil {
		if p, err2 := exec.LookPath("postgres"); err2 == nil {
			return i, p, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		i, p := filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if executable(i) && executable(p) {
			return i, p, nil
		}
	}
	return "", "", errors.New("PostgreSQL is not installed (apt-get install postgresql)")
}

// version is the major version in a path such as /usr/lib/postgresql/15/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode()&0o111 != 0
}

// Require fails t under CI=true and skips it otherwise when PostgreSQL is
// missing. The skip message is loud on purpose: a skipped PostgreSQL suite
// is a suite that did not run.
func Require(t testing.TB) {
	t.Helper()
	if Missing(t) {
		t.Skip("PostgreSQL is not installed")
	}
}

// Missing reports whether PostgreSQL is missing. It fails t under CI=true,
// and otherwise logs a loud banner, to t and to the terminal.
func Missing(t testing.TB) bool {
	t.Helper()
	_, _, err := Binaries()
	return testserver.Missing(t, "POSTGRESQL", err)
}

// Start runs initdb in a new temporary directory and starts postgres on a
// free loopback port, then waits until it accepts connections.
func Start() (*Server, error) {
	initdb, postgres, err := Binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ratewise-postgres-")
	if err != nil {
		return nil, err
	}
	owner, err := unprivileged(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	init := exec.Command(initdb, "-D", data, "-U", "ratewise", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync")
	runAs(init, owner)
	if out, err := init.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %w: %s", err, out)
	}
	for attempt := range 5 {
		if attempt > 0 {
			// What the failed attempt's processes held (the port, the
			// shared memory block) is let go when they have exited.
			time.Sleep(200 * time.Millisecond)
		}
		var s *Server
		if s, err = start(postgres, dir, data, owner, 0); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, err
}

// start starts postgres on data, on port, or on a free port if port is 0.
func start(postgres, dir, data string, owner *owner, port int) (*Server, error) {
	if port == 0 {
		var err error
		if port, err = testserver.FreePort(); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(postgres, "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200",
		"-c", "logging_collector=off")
	logFile, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stdout, cmd.Stderr = logFile, logFile
	runAs(cmd, owner)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{
		URL:  fmt.Sprintf("postgres://ratewise@127.0.0.1:%d/ratewise?sslmode=disable", port),
		Port: port, cmd: cmd, dir: dir, done: make(chan struct{}),
		postgres: postgres, data: data, owner: owner,
	}
	go func() { cmd.Wait(); close(s.done) }()
	if err := s.waitReady(); err != nil {
		s.kill()
		return nil, fmt.Errorf("pgtest: postgres on port %d did not start: %w; log: %s", port, err, s.log())
	}
	return s, nil
}

// waitReady waits until the server accepts connections, then creates the
// database "ratewise" if it is not there.
func (s *Server) waitReady() error {
	admin := fmt.Sprintf("postgres://ratewise@127.0.0.1:%d/postgres?sslmode=disable", s.Port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-s.done:
			return errors.New("exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, admin)
		if err == nil {
			var n int // 1 after a restart
			err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = 'ratewise'").Scan(&n)
			if err == nil && n == 0 {
				// Fails while another session, such as autovacuum,
				// is in template1: tried again below.
				_, err = conn.Exec(ctx, "CREATE DATABASE ratewise")
			}
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return string(b)
}

// Stop shuts the server down (by the PID this package started: a fast
// shutdown, then a kill if it lingers) and removes its directory. It is
// safe to call twice.
func (s *Server) Stop() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(os.Interrupt) // postgres's fast shutdown
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			s.kill()
		}
	}
	os.RemoveAll(s.dir)
}

// kill kills the server and every process it forked, and waits for it.
func (s *Server) kill() {
	select {
	case <-s.done:
	default:
		killGroup(s.cmd)
		<-s.done
	}
}

// Restart shuts the server down (a fast shutdown, which ends every
// connection) and starts it again on the same port and data, for fault
// tests. Clients connected before see their connections fail, and new
// ones succeed once it is back.
func (s *Server) Restart() error {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Signal(os.Interrupt)
		<-s.done
	}
	var err error
	for range 50 { // the port may take a moment to be free again
		var n *Server
		if n, err = start(s.postgres, s.dir, s.data, s.owner, s.Port); err == nil {
			s.cmd, s.done = n.cmd, n.done
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// PID is the server's process ID.
func (s *Server) PID() int { return s.cmd.Process.Pid }

var (
	sharedOnce sync.Once
	shared     *Server
	sharedErr  error
)

// Shared returns the package's shared server, starting it on first use, and
// skips or fails t as Require does when PostgreSQL is missing. Main stops it.
func Shared(t testing.TB) *Server {
	t.Helper()
	Require(t)
	sharedOnce.Do(func() { shared, sharedErr = Start() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

// Main runs m, then stops the shared server if a test started it.
func Main(m *testing.M) int {
	defer StopShared()
	return m.Run()
}

// StopShared stops the shared server if a test started it, for a TestMain
// that also stops other servers.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}
