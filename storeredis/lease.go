package storeredis

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// markSuffix follows a state's key in the key of its mark: the state the
// latest lease on it left (store.Store.Lease), in the state's hash slot.
const markSuffix = ":mark"

// Lease books cost units of a lease for key under alg (see store.Store.Lease),
// in one round trip: as Reserve books for the token bucket and GCRA, and as
// Decide decides for the fixed window. An admission also writes the state
// it leaves to the key's mark (the state's key followed by ":mark"), with
// the state's TTL; Reset puts the mark back.
func (s *Store) Lease(
	ctx context.Context,
	k store.Key,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
	maxWait time.Duration,
) (algorithms.Result, time.Duration, error) {
	now = s.orNow(now)
	if _, err := scriptFor(alg); err != nil {
		return algorithms.Result{}, 0, err
	}
	if err := storecheck.Lease(alg, s.checkTime(now), cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	b := &leaseBooking{booking: booking{alg: alg, cost: cost, maxWait: maxWait}}
	b.effect, b.now, b.charges = changes, now, true
	b.own[0] = s.Key(k.String(), alg)
	b.rkeys = b.own[:]
	if err := s.do(ctx, b); err != nil {
		return algorithms.Result{}, 0, err
	}
	return b.res, b.delay, nil
}

// leaseBooking is the op of a lease's booking (lease.lua): a booking's
// reply, with the mark among its keys and a third parameter always sent.
type leaseBooking struct{ booking }

func (b *leaseBooking) script() (*redis.Script, error) { return scripts.Lease(b.alg.Kind()) }

// keys are the state and its mark, then with a request ID its once key.
func (b *leaseBooking) keys() []string {
	keys := []string{b.rkeys[0], b.rkeys[0] + markSuffix}
	if once := b.rid.key(b.rkeys[0], onceDecide); once != "" {
		keys = append(keys, once)
	}
	return keys
}

// args are ARGV: now, the cost, the three parameters (an empty string for a burst the
// kind does not take), the longest wait in µs, then with a once key the
// limit and the once key's least lifetime.
func (b *leaseBooking) args() []any {
	p := algo.ParamsOf(b.alg)
	var burst any = ""
	if algo.TakesBurst(b.alg.Kind()) {
		burst = p.Burst
	}
	args := []any{b.at, b.cost, p.Limit, p.Window.Microseconds(), burst, b.maxWait.Microseconds()}
	if b.rid.id != "" {
		args = append(args, algo.MaxCost(b.alg), b.horizon)
	}
	return args
}
