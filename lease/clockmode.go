package lease

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

// clockMode is what a Store knows of its inner store's clock: whether it
// decides at the now its caller passes, which leases need (a lease's
// windows are derived from the now the booking was given), or on a clock
// of its own, such as a Redis or PostgreSQL server's by default.
type clockMode struct {
	mode    atomic.Int32 // unknown, callerTime or ownTime
	probing atomic.Bool
}

const (
	unknown int32 = iota
	callerTime
	ownTime
)

func (t *clockMode) caller() bool { return t.mode.Load() == callerTime }
func (t *clockMode) own() bool    { return t.mode.Load() == ownTime }

// probeTime is a time no store's own clock shows: a decision made at it
// was made at the caller's now.
var probeTime = time.Unix(86400, 0).UTC()

// probeKey is a key no limiter uses; an inspection of it writes nothing.
var probeKey = store.Key{Namespace: "ratewise-lease", Name: "timeline-probe"}

// learn finds out, once, which clock s decides on: it inspects probeKey
// under alg at probeTime, which a store on the caller's time answers with
// At at probeTime (a key without state decides at the now it is given),
// and one on its own clock with At at its own time. A failed inspection
// leaves the mode unknown, for a later decision to try again; meanwhile
// nothing leases. One caller probes at a time, and only callers that
// would not lease anyway.
func (t *clockMode) learn(ctx context.Context, s store.Store, alg algorithms.Algorithm) {
	if t.mode.Load() != unknown || !t.probing.CompareAndSwap(false, true) {
		return
	}
	defer t.probing.Store(false)
	res, err := s.Decide(ctx, probeKey, alg, probeTime, 0)
	if err != nil {
		return
	}
	if res.At.Equal(probeTime) {
		t.mode.Store(callerTime)
	} else {
		t.mode.Store(ownTime)
	}
}
