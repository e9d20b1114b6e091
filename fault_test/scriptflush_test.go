package fault_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/storeredis"
)

// TestScriptFlushUnderLoad: SCRIPT FLUSH sent ten times by another client
// under load costs no decision an error: the store sends a script Redis
// no longer has again (NOSCRIPT, then EVAL).
func TestScriptFlushUnderLoad(t *testing.T) {
	srv := startServer(t, false)
	rdb := newClient(t, clientOptions(srv.Addr))
	evals := countEvals(rdb)
	lim := newLimiter(t, storeredis.New(rdb))
	admin := newClient(t, &redis.Options{Addr: srv.Addr})

	ty := &tally{}
	stop := make(chan struct{})
	wait := load(8, ty, stop, func(i int) (ratewise.Result, error) {
		return lim.Allow(context.Background(), fmt.Sprintf("flush:%d", i))
	})
	flushes := 0
	var flushErr error
	for range 10 {
		time.Sleep(90 * time.Millisecond)
		if flushErr = admin.ScriptFlush(context.Background()).Err(); flushErr != nil {
			break
		}
		flushes++
	}
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()

	t.Logf("figures: %s flushes=%d script_resends=%d", ty.figures(), flushes, evals.Load())
	ty.check(t)
	if flushErr != nil {
		t.Fatalf("SCRIPT FLUSH: %v", flushErr)
	}
	if n := ty.errors(); n != 0 {
		t.Errorf("%d decisions failed across SCRIPT FLUSH, want 0", n)
	}
	// One EVAL loads the script on first use; each flush that reached a
	// script call before the next flush adds one or more.
	if n := evals.Load(); n < 2 {
		t.Errorf("%d EVALs: the flushes never made the store send a script again, so nothing was tested", n)
	}
	if ty.allowed.Load() == 0 {
		t.Errorf("no decision admitted")
	}
}

// countEvals counts the EVAL commands c sends. The store sends EVALSHA,
// and EVAL only for a script Redis answered NOSCRIPT to. (go-redis's hooks
// do not see the NOSCRIPT error itself: the EVALSHA's error is nil there.)
func countEvals(c *redis.Client) *atomic.Int64 {
	h := &evalHook{}
	c.AddHook(h)
	return &h.n
}

type evalHook struct{ n atomic.Int64 }

func (h *evalHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *evalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *evalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == "eval" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
