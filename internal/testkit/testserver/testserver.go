// Package testserver holds what the packages that start throwaway servers
// for tests (internal/testkit/redistest, internal/testkit/pgtest) share: a free loopback
// port, and the loud skip when a server is not installed.
package testserver

import (
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
)

// FreePort asks the kernel for a free loopback port. Another process could
// take it before the server binds it; callers retry a failed start.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Missing reports whether missing, the error that a suite's server is not
// installed, is non-nil. It then fails t under CI=true, and otherwise logs
// a loud banner naming suite (such as "REDIS"), to t and, once per suite,
// to the terminal: a skipped suite is a suite that did not run.
func Missing(t testing.TB, suite string, missing error) bool {
	t.Helper()
	if missing == nil {
		return false
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v; CI=true requires it", missing)
	}
	msg := fmt.Sprintf("%s\nSKIPPING %s TESTS: %v\n%s", banner, suite, missing, banner)
	once, _ := warned.LoadOrStore(suite, new(sync.Once))
	once.(*sync.Once).Do(func() { toTerminal(msg) })
	t.Log("\n" + msg)
	return true
}

var warned sync.Map // suite → *sync.Once

// toTerminal writes msg to the controlling terminal, if there is one: go
// test shows nothing of a package whose tests pass or skip unless run with
// -v, and a skipped suite must not go unnoticed.
func toTerminal(msg string) {
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return
	}
	defer tty.Close()
	fmt.Fprintln(tty, msg)
}

const banner = "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
