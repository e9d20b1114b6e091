package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/testserver"
)

// StartDebuggable starts a server that accepts DEBUG (DEBUG SLEEP stalls
// it) from loopback clients. Redis 7 refuses DEBUG unless configured to
// allow it; older servers allow it always and reject the setting, so the
// server is started without it when it is refused.
func StartDebuggable() (*Server, error) {
	if s, err := Start("enable-debug-command local"); err == nil {
		return s, nil
	}
	return Start()
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it to
// exit, keeping its directory so Restart can start it again. It is safe to
// call on a server that is not running.
func (s *Server) Kill() {
	select {
	case <-s.done:
	default:
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Restart starts a killed server again on the same address and
// configuration (with empty data: nothing is kept on disk), and waits until
// it answers. The caller must not use s concurrently. If another process has
// taken the port meanwhile, Restart fails after a few seconds of retries.
func (s *Server) Restart() error {
	select {
	case <-s.done:
	default:
		return fmt.Errorf("redistest: %s is still running", s.Addr)
	}
	bin, err := Binary()
	if err != nil {
		return err
	}
	var lastErr error
	for range 20 {
		cmd := exec.Command(bin, filepath.Join(s.dir, "redis.conf"))
		killWithParent(cmd)
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan struct{})
		s.cmd, s.done = cmd, done
		go func() { cmd.Wait(); close(done) }()
		if lastErr = s.waitReady(); lastErr == nil {
			return nil
		}
		s.Kill()
		time.Sleep(100 * time.Millisecond) // the port may be briefly held
	}
	return fmt.Errorf("redistest: %s did not restart: %w; log: %s", s.Addr, lastErr, s.log())
}

// ReplicatedCluster is a Redis Cluster whose masters each have replicas, so
// that killing a master fails its slots over to a replica.
type ReplicatedCluster struct {
	Masters  []*Server
	Replicas [][]*Server // Replicas[i] replicate Masters[i]
}

// Addrs returns every node's address, masters first.
func (c *ReplicatedCluster) Addrs() []string {
	var addrs []string
	for _, s := range c.Masters {
		addrs = append(addrs, s.Addr)
	}
	for _, rs := range c.Replicas {
		for _, s := range rs {
			addrs = append(addrs, s.Addr)
		}
	}
	return addrs
}

// Stop stops every node.
func (c *ReplicatedCluster) Stop() {
	for _, s := range c.Masters {
		s.Stop()
	}
	for _, rs := range c.Replicas {
		for _, s := range rs {
			s.Stop()
		}
	}
}

// StartClusterWithReplicas starts a cluster of masters that split the slots
// evenly, each with replicasPerMaster replicas, and a cluster-node-timeout of
// 1 s, so that a killed master's replica takes over within a few seconds. It
// waits until every node reports cluster_state:ok and every replica is in
// sync with its master.
func StartClusterWithReplicas(masters, replicasPerMaster int) (*ReplicatedCluster, error) {
	c := &ReplicatedCluster{Replicas: make([][]*Server, masters)}
	node := func() (*Server, error) {
		busPort, err := testserver.FreePort()
		if err != nil {
			return nil, err
		}
		// A replica syncs at once: Redis waits 5s by default for more
		// replicas to share a diskless transfer.
		s, err := Start("cluster-enabled yes", "cluster-config-file nodes.conf",
			"cluster-node-timeout 1000", "cluster-port "+strconv.Itoa(busPort), "repl-diskless-sync-delay 0")
		if err != nil {
			return nil, err
		}
		s.busPort = busPort
		return s, nil
	}
	for i := range masters {
		s, err := node()
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Masters = append(c.Masters, s)
		for range replicasPerMaster {
			r, err := node()
			if err != nil {
				c.Stop()
				return nil, err
			}
			c.Replicas[i] = append(c.Replicas[i], r)
		}
	}
	if err := c.form(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *ReplicatedCluster) form() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all := append(append([]*Server(nil), c.Masters...), func() []*Server {
		var rs []*Server
		for _, r := range c.Replicas {
			rs = append(rs, r...)
		}
		return rs
	}()...)
	clients := map[*Server]*redis.Client{}
	for _, s := range all {
		cl := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer cl.Close()
		clients[s] = cl
	}
	const slots = 16384
	for i, s := range c.Masters {
		lo, hi := i*slots/len(c.Masters), (i+1)*slots/len(c.Masters)-1
		if err := clients[s].ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: ADDSLOTSRANGE on %s: %w", s.Addr, err)
		}
	}
	host, port, _ := net.SplitHostPort(c.Masters[0].Addr)
	for _, s := range all[1:] {
		if err := clients[s].Do(ctx, "CLUSTER", "MEET", host, port, c.Masters[0].busPort).Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER MEET: %w", err)
		}
	}
	// A replica can name its master only once it knows the master's node.
	for i, m := range c.Masters {
		id, err := clients[m].Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("redistest: CLUSTER MYID: %w", err)
		}
		for _, r := range c.Replicas[i] {
			for {
				err := clients[r].Do(ctx, "CLUSTER", "REPLICATE", id).Err()
				if err == nil {
					break
				}
				if !strings.Contains(err.Error(), "Unknown node") {
					return fmt.Errorf("redistest: CLUSTER REPLICATE on %s: %w", r.Addr, err)
				}
				if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
					return fmt.Errorf("redistest: %s never learned of %s: %w", r.Addr, m.Addr, err)
				}
			}
		}
	}
	for {
		ready := true
		for _, s := range all {
			info, err := clients[s].ClusterInfo(ctx).Result()
			if err != nil {
				return fmt.Errorf("redistest: CLUSTER INFO: %w", err)
			}
			f := infoFields(info)
			if f["cluster_state"] != "ok" || f["cluster_known_nodes"] != strconv.Itoa(len(all)) ||
				f["cluster_size"] != strconv.Itoa(len(c.Masters)) {
				ready = false
				break
			}
		}
		if ready {
			for _, rs := range c.Replicas {
				for _, r := range rs {
					repl, err := clients[r].Info(ctx, "replication").Result()
					if err != nil {
						return fmt.Errorf("redistest: INFO replication: %w", err)
					}
					if infoFields(repl)["master_link_status"] != "up" {
						ready = false
					}
				}
			}
		}
		if ready {
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("redistest: the cluster did not become ready: %w", err)
		}
	}
}

// WaitReplicated waits until every replica has applied every write its
// master had made when WaitReplicated was called. Replication is
// asynchronous: a write a master has acknowledged may not yet be on its
// replica when the master dies, and a failover then forgets it; what
// WaitReplicated has seen through survives one.
func (c *ReplicatedCluster) WaitReplicated(ctx context.Context) error {
	for i, m := range c.Masters {
		want, err := replOffset(ctx, m, "master_repl_offset")
		if err != nil {
			return err
		}
		for _, r := range c.Replicas[i] {
			for {
				got, err := replOffset(ctx, r, "slave_repl_offset")
				if err != nil {
					return err
				}
				if got >= want {
					break
				}
				if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
					return fmt.Errorf("redistest: %s stayed at offset %d of its master's %d: %w", r.Addr, got, want, err)
				}
			}
		}
	}
	return nil
}

// replOffset reads one replication offset of INFO replication on s.
func replOffset(ctx context.Context, s *Server, field string) (int64, error) {
	cl := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer cl.Close()
	info, err := cl.Info(ctx, "replication").Result()
	if err != nil {
		return 0, fmt.Errorf("redistest: INFO replication on %s: %w", s.Addr, err)
	}
	n, err := strconv.ParseInt(infoFields(info)[field], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redistest: %s of %s: %w", field, s.Addr, err)
	}
	return n, nil
}

// infoFields splits an INFO or CLUSTER INFO reply into its fields.
func infoFields(info string) map[string]string {
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
