package fault_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/storeredis"
)

// TestKilledMidLoad: Redis killed (SIGKILL) under load and restarted on the
// same port 300 ms later. Every failure is store.ErrUnavailable (callers
// have no deadline of their own, so never a context error), none is
// reported as allowed, no decision succeeds while the server is down, and
// decisions resume after the restart.
//
// Recovery is bounded by go-redis's dial circuit breaker: after PoolSize
// failed dials a pool stops dialing and probes the address once a second,
// so the first decision after a restart can wait up to about a second.
func TestKilledMidLoad(t *testing.T) {
	srv := startServer(t, false)
	rdb := newClient(t, clientOptions(srv.Addr))
	lim := newLimiter(t, storeredis.New(rdb))

	ty := &tally{}
	var downFrom, downTo atomic.Int64 // UnixNano: the server certainly down in between
	var okWhileDown atomic.Int64
	var firstOKAfterRestart atomic.Int64
	var restarted atomic.Int64
	stop := make(chan struct{})
	wait := load(8, ty, stop, func(i int) (ratewise.Result, error) {
		start := time.Now().UnixNano()
		res, err := lim.Allow(context.Background(), fmt.Sprintf("kill:%d", i))
		if err == nil {
			end := time.Now().UnixNano()
			if from, to := downFrom.Load(), downTo.Load(); from != 0 && start > from && (to == 0 || end < to) {
				okWhileDown.Add(1)
			}
			if r := restarted.Load(); r != 0 && start >= r {
				firstOKAfterRestart.CompareAndSwap(0, end)
			}
		}
		return res, err
	})

	time.Sleep(300 * time.Millisecond)
	srv.Kill()
	killed := time.Now()
	downFrom.Store(killed.UnixNano())
	okBeforeKill := ty.allowed.Load() + ty.denied.Load()
	time.Sleep(300 * time.Millisecond)
	restartBegin := time.Now()
	downTo.Store(restartBegin.UnixNano())
	if err := srv.Restart(); err != nil {
		close(stop)
		wait()
		t.Fatal(err)
	}
	restartedAt := time.Now()
	restarted.Store(restartedAt.UnixNano())
	errorsAtRestart := ty.errors()
	recovered := waitFor(3*time.Second, func() bool { return firstOKAfterRestart.Load() != 0 })
	time.Sleep(100 * time.Millisecond)
	close(stop)
	wait()

	recovery := time.Duration(-1)
	if recovered {
		recovery = time.Duration(firstOKAfterRestart.Load() - restartedAt.UnixNano())
	}
	t.Logf("figures: %s ok_before_kill=%d errors_while_down=%d ok_while_down=%d down_for=%v restart_took=%v recovery=%v",
		ty.figures(), okBeforeKill, errorsAtRestart, okWhileDown.Load(),
		restartedAt.Sub(killed).Round(time.Millisecond), restartedAt.Sub(restartBegin).Round(time.Millisecond),
		recovery.Round(time.Millisecond))

	ty.check(t)
	if okBeforeKill == 0 {
		t.Errorf("no decision succeeded before the kill")
	}
	if errorsAtRestart == 0 {
		t.Errorf("no decision failed while the server was down")
	}
	if n := okWhileDown.Load(); n > 0 {
		t.Errorf("%d decisions succeeded while the server was down", n)
	}
	if !recovered {
		t.Errorf("no decision succeeded within 3s of the restart")
	}
}
