package redisprobe_test

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/redisprobe"
)

// Tests on a fake server, for what no real one at hand does: a Redis 4.0,
// a server that never answers a script, a proxy that refuses keys of
// different slots in one script.

// A Redis older than 5.0 refuses a script's write after TIME: the probe
// says to upgrade, or to use client time. No such Redis is at hand, so a
// fake server answers as Redis 4.0 does, with its error text.
func TestRedis4(t *testing.T) {
	addr := fakeRedis(t, fake{version: "4.0.14"})
	rep := redisprobe.Run(context.Background(), safeClient(t, addr), time.Second)
	expect(
		t,
		rep,
		want{"server", redisprobe.StatusFailure, "Redis 4.0.14", "upgrade to Redis 5.0 or later"},
		want{"scripts", redisprobe.StatusOK, "", ""},
		want{"keys", redisprobe.StatusOK, "", ""},
		want{
			"server time",
			redisprobe.StatusFailure,
			"a script that read TIME cannot write: ERR Error running script",
			"storeredis.WithClientTime()",
		},
		want{"clock", redisprobe.StatusOK, "Redis's clock is", ""},
	)
}

// A probe stops when its context ends, whichever check is under way, and
// says which.
func TestContext(t *testing.T) {
	addr := fakeRedis(t, fake{version: "4.0.14", stall: true})
	c := redis.NewClient(
		&redis.Options{Addr: addr, ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second, MaxRetries: -1},
	)
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	rep := redisprobe.Run(ctx, c, time.Second)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the probe took %v after its context's 200ms", d)
	}
	expect(t, rep,
		want{"server", redisprobe.StatusFailure, "Redis 4.0.14", ""},
		want{"scripts", redisprobe.StatusFailure, "context deadline exceeded", "give the probe more time"})
	if _, ok := byCheck(rep)["keys"]; ok {
		t.Errorf("checks after the context ended ran:\n%s", report(rep))
	}

	cancel()
	rep = redisprobe.Run(ctx, c, time.Second)
	expect(t, rep, want{"server", redisprobe.StatusFailure, "not checked: the probe's context ended", ""})
}

// A proxy in front of a cluster that a *redis.Client reaches as one server
// refuses a script whose keys are in different slots: coalesced batches
// would fail there.
func TestProxyRefusesCrossSlot(t *testing.T) {
	addr := fakeRedis(t, fake{version: "7.2.4", crossSlot: true})
	expect(
		t,
		redisprobe.Run(context.Background(), safeClient(t, addr), time.Second),
		want{"server", redisprobe.StatusOK, "Redis 7.2.4", ""},
		want{
			"keys",
			redisprobe.StatusFailure,
			"cannot write keys of different hash slots, as a coalesced batch",
			"storeredis.WithCoalescing(0)",
		},
		want{"server time", redisprobe.StatusOK, "", ""},
	)
}

// fake is how fakeRedis answers: the version INFO gives; with stall, a
// script gets no answer; with crossSlot, a script whose keys' hash tags
// differ is refused with CROSSSLOT, as by a proxy in front of a cluster.
// A server of a version before 5.0 refuses a write after TIME.
type fake struct {
	version          string
	stall, crossSlot bool
}

// fakeRedis serves the RESP2 protocol as far as the probe needs: INFO,
// EVAL and EVALSHA of scripts recognized by the commands they call, with
// Redis 4.0's error text for a write after TIME and Redis Cluster's for
// keys in different slots.
func fakeRedis(t *testing.T, f fake) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		scripts = map[string]string{}
		conns   sync.WaitGroup
		open    []net.Conn
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	info := "# Server\r\nredis_version:" + f.version + "\r\n\r\n# " +
		"Memory\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n\r\n" +
		"# Persistence\r\naof_enabled:1\r\nrdb_last_bgsave_time_sec:-1\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n"
	tag := func(key string) string {
		_, rest, _ := strings.Cut(key, "{")
		tag, _, _ := strings.Cut(rest, "}")
		return tag
	}
	run := func(src string, keys []string) string {
		switch {
		case f.crossSlot && len(keys) > 1 && tag(keys[0]) != tag(keys[1]):
			return "-CROSSSLOT Keys in request don't hash to the same slot\r\n"
		case strings.Contains(src, "redis.call('TIME')") && strings.Contains(src, "'SET'") && f.version < "5":
			sha := sha1.Sum([]byte(src))
			return "-ERR Error running script (call to f_" + hex.EncodeToString(
				sha[:],
			) + "): @user_script:1: @user_script: 1: " +
				"Write commands not allowed after non deterministic commands. Call redis.replicate_commands() at the " +
				"start of your script " +
				"in order to switch to single commands replication mode.\r\n"
		case strings.Contains(src, "redis.call('TIME')") && !strings.Contains(src, "'SET'"):
			now := time.Now()
			return fmt.Sprintf("*2\r\n:%d\r\n:%d\r\n", now.Unix(), now.Nanosecond()/1000)
		case strings.Contains(src, "'SET'"):
			return ":" + strconv.Itoa(len(keys)) + "\r\n"
		}
		return ":1\r\n"
	}
	serve := func(c net.Conn) {
		defer conns.Done()
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			args, err := readCommand(r)
			if err != nil {
				return
			}
			var reply string
			switch cmd := strings.ToUpper(args[0]); cmd {
			case "INFO":
				reply = fmt.Sprintf("$%d\r\n%s\r\n", len(info), info)
			case "PING":
				reply = "+PONG\r\n"
			case "EVAL", "EVALSHA":
				if f.stall {
					r.ReadByte() // blocks until the client gives up and closes
					return
				}
				src := args[1]
				mu.Lock()
				if cmd == "EVAL" {
					sha := sha1.Sum([]byte(src))
					scripts[hex.EncodeToString(sha[:])] = src
				} else {
					src = scripts[strings.ToLower(src)]
				}
				mu.Unlock()
				nkeys, _ := strconv.Atoi(args[2])
				if src == "" {
					reply = "-NOSCRIPT No matching script. Please use EVAL.\r\n"
				} else {
					reply = run(src, args[3:3+nkeys])
				}
			default: // HELLO, which Redis 4.0 does not know, and the rest
				reply = fmt.Sprintf("-ERR unknown command '%s'\r\n", args[0])
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			open = append(open, c)
			conns.Add(1)
			mu.Unlock()
			go serve(c)
		}
	}()
	return l.Addr().String()
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || !strings.HasPrefix(line, "*") || n < 1 {
		return nil, errors.New("not an array")
	}
	args := make([]string, n)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil {
			return nil, err
		}
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
