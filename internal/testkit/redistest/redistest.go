// Package redistest starts throwaway redis-server processes for tests and
// benchmarks: a standalone server and a Redis Cluster, on free loopback
// ports, with nothing kept on disk. It never connects to a Redis it did not
// start, and it stops only the processes it started, by PID. On Linux the
// children are also killed if the test process dies (the parent-death
// signal).
//
// A test package shares one server through Shared, and stops it in TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }
//
// When redis-server is not installed, Require skips the calling test with a
// loud message, or fails it when CI=true.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/testserver"
)

// Server is one redis-server process this package started.
type Server struct {
	Addr    string
	busPort int // the cluster bus port, for cluster nodes
	cmd     *exec.Cmd
	dir     string
	done    chan struct{}
}

// Binary returns the path of redis-server, or an error saying it is missing.
func Binary() (string, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New("redis-server is not installed (apt-get install redis-server redis-tools)")
	}
	return path, nil
}

// Require fails t under CI=true and skips it otherwise when redis-server is
// missing. The skip message is loud on purpose: a skipped Redis suite is a
// suite that did not run.
func Require(t testing.TB) {
	t.Helper()
	if Missing(t) {
		t.Skip("redis-server is not installed")
	}
}

// Missing reports whether redis-server is missing, for callers that can
// still do part of their work without it. It fails t under CI=true, and
// otherwise logs a loud banner, to t and to the terminal.
func Missing(t testing.TB) bool {
	t.Helper()
	_, err := Binary()
	return testserver.Missing(t, "REDIS", err)
}

// Start starts a redis-server on a free loopback port with the given extra
// configuration lines ("cluster-enabled yes", ...) and waits until it answers.
func Start(extra ...string) (*Server, error) {
	var err error
	for range 5 {
		var s *Server
		if s, err = start(extra); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func start(extra []string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	port, err := testserver.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ratewise-redis-")
	if err != nil {
		return nil, err
	}
	conf := []string{
		"port " + strconv.Itoa(port),
		"bind 127.0.0.1",
		"save \"\"",
		"appendonly no",
		"dir " + dir,
		"daemonize no",
		"loglevel warning",
		"logfile " + filepath.Join(dir, "redis.log"),
	}
	conf = append(conf, extra...)
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, confPath)
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	if err := s.waitReady(); err != nil {
		s.Stop()
		return nil, fmt.Errorf("redistest: %s did not start: %w; log: %s", s.Addr, err, s.log())
	}
	return s, nil
}

func (s *Server) waitReady() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-s.done:
			return errors.New("exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	return string(b)
}

// Stop kills the server (by the PID this package started) and removes its
// directory. It is safe to call twice.
func (s *Server) Stop() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.dir)
}

// Cluster is a Redis Cluster of masters only, formed from Go with CLUSTER
// MEET and ADDSLOTSRANGE, so it needs no redis-cli.
type Cluster struct {
	Servers []*Server
}

// Addrs returns the masters' addresses.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		addrs[i] = s.Addr
	}
	return addrs
}

// Stop stops every server.
func (c *Cluster) Stop() {
	for _, s := range c.Servers {
		s.Stop()
	}
}

// StartCluster starts masters servers and forms a cluster that splits the
// 16384 slots evenly between them, then waits until every node reports
// cluster_state:ok.
func StartCluster(masters int) (*Cluster, error) {
	c := &Cluster{}
	for range masters {
		busPort, err := testserver.FreePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		s, err := Start("cluster-enabled yes", "cluster-config-file nodes.conf",
			"cluster-node-timeout 2000", "cluster-port "+strconv.Itoa(busPort))
		if err != nil {
			c.Stop()
			return nil, err
		}
		s.busPort = busPort
		c.Servers = append(c.Servers, s)
	}
	if err := c.form(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) form() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clients := make([]*redis.Client, len(c.Servers))
	for i, s := range c.Servers {
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr})
		defer clients[i].Close()
	}
	const slots = 16384
	for i, cl := range clients {
		lo, hi := i*slots/len(clients), (i+1)*slots/len(clients)-1
		if err := cl.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: ADDSLOTSRANGE on %s: %w", c.Servers[i].Addr, err)
		}
	}
	// The bus port is not the default port+10000, so MEET names it.
	host, port, _ := net.SplitHostPort(c.Servers[0].Addr)
	for _, cl := range clients[1:] {
		if err := cl.Do(ctx, "CLUSTER", "MEET", host, port, c.Servers[0].busPort).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET: %w", err)
		}
	}
	for {
		ready := true
		for _, cl := range clients {
			info, err := cl.ClusterInfo(ctx).Result()
			if err != nil {
				return fmt.Errorf("redistest: CLUSTER INFO: %w", err)
			}
			if !clusterOK(info, len(clients)) {
				ready = false
				break
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: the cluster did not become ready: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// clusterOK reports whether CLUSTER INFO says the cluster is ok and knows all
// its masters.
func clusterOK(info string, masters int) bool {
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			fields[k] = v
		}
	}
	return fields["cluster_state"] == "ok" && fields["cluster_known_nodes"] == strconv.Itoa(masters) &&
		fields["cluster_size"] == strconv.Itoa(masters)
}

// The servers a test package shares, started on first use.
var (
	sharedMu         sync.Mutex
	sharedStandalone *Server
	sharedCluster    *Cluster
)

// Standalone returns the package's shared standalone server, starting it on
// first use. It calls Require first.
func Standalone(t testing.TB) *Server {
	t.Helper()
	Require(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedStandalone == nil {
		s, err := Start()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		sharedStandalone = s
	}
	return sharedStandalone
}

// SharedCluster returns the package's shared 3-master cluster, starting it on
// first use. It calls Require first. Under go test -short it skips t: the
// quick path runs on one standalone server.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	SkipShort(t, "a Redis Cluster")
	Require(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedCluster == nil {
		c, err := StartCluster(3)
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		sharedCluster = c
	}
	return sharedCluster
}

// SkipShort skips t under go test -short, saying what the quick path leaves
// out, such as "a Redis Cluster".
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("%s: runs without -short", what)
	}
}

// StopShared stops the shared servers.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sharedStandalone != nil {
		sharedStandalone.Stop()
		sharedStandalone = nil
	}
	if sharedCluster != nil {
		sharedCluster.Stop()
		sharedCluster = nil
	}
}

// Main runs the tests and then stops the shared servers. Use it from TestMain.
func Main(m *testing.M) int {
	defer StopShared()
	return m.Run()
}
