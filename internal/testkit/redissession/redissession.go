// Package redissession opens the connection to Redis that ratewise's
// measuring commands share: to a given server, or to a throwaway
// redis-server it starts.
package redissession

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/internal/testkit/roundtrips"
)

// Session is a measuring command's connection to Redis: a client whose round
// trips are counted, and a prefix of its own for every key it writes.
type Session struct {
	Client     *redis.Client
	RoundTrips *roundtrips.Counter
	Prefix     string
	close      func()
}

// Open connects to the Redis at addr, or to a throwaway redis-server it
// starts when addr is empty, with a pool of poolSize connections; keys are
// to go under name plus a unique suffix. Close deletes them from a given
// server, and stops one Open started.
func Open(addr, name string, poolSize int) (*Session, error) {
	stop, own := func() {}, false
	if addr == "" {
		srv, err := redistest.Start()
		if err != nil {
			return nil, err
		}
		stop, addr, own = srv.Stop, srv.Addr, true
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
	s := &Session{Client: c, RoundTrips: roundtrips.Count(c), Prefix: fmt.Sprintf("%s:%d:", name, time.Now().UnixNano())}
	s.close = func() {
		if !own { // a server of our own goes with its keys
			redisinfo.DeleteKeys(context.Background(), c, s.Prefix)
		}
		c.Close()
		stop()
	}
	return s, nil
}

// Close deletes the session's keys from a server it was given, closes its
// client and stops the server Open started, if any.
func (s *Session) Close() { s.close() }
