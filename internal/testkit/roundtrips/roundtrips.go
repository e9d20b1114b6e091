// Package roundtrips counts the round trips a go-redis client makes, for
// the commands that measure what a decision costs and for tests.
package roundtrips

import (
	"context"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Counter counts the round trips a go-redis client makes: each command
// sent alone, and each pipeline. Connection setup (HELLO, CLIENT SETINFO,
// AUTH, SELECT on a new pooled connection) is not counted, so the count
// measures what the caller's operations cost.
type Counter struct {
	n atomic.Int64
}

// Count adds a counting hook to c.
func Count(c interface{ AddHook(redis.Hook) }) *Counter {
	r := &Counter{}
	c.AddHook(roundTripHook{r})
	return r
}

// Load returns the round trips so far.
func (r *Counter) Load() int64 { return r.n.Load() }

// Reset sets the count to 0.
func (r *Counter) Reset() { r.n.Store(0) }

func isSetup(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

type roundTripHook struct{ r *Counter }

func (h roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isSetup(cmd) {
			h.r.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if !isSetup(c) {
				h.r.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}
