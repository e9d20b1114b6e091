//go:build unix

package pgtest

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A started server answers on its own port, runs as an unprivileged user
// under root, and is gone, with its directory, after Stop.
func TestStartAndStop(t *testing.T) {
	Require(t)
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		s.Stop()
		t.Fatal(err)
	}
	var port int
	var db, superuser string
	err = conn.QueryRow(ctx, "SELECT current_setting('port')::int, current_database(), current_user").
		Scan(&port, &db, &superuser)
	conn.Close(ctx)
	if err != nil || port != s.Port || db != "ratewise" || superuser != "ratewise" {
		s.Stop()
		t.Fatalf("port %d, database %q, user %q, %v; want %d, ratewise, ratewise", port, db, superuser, err, s.Port)
	}
	if os.Geteuid() == 0 {
		if uid := processUID(t, s.PID()); uid == 0 {
			s.Stop()
			t.Fatal("the server runs as root")
		}
	}
	pid, dir := s.PID(), s.dir
	s.Stop()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("process %d still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Stop: %v", dir, err)
	}
	s.Stop() // twice is safe
}

// processUID reads a process's real user ID from /proc, on Linux.
func processUID(t *testing.T, pid int) int {
	fi, err := os.Stat("/proc/" + itoa(pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
