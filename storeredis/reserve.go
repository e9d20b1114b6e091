package storeredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/storecheck"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Reserve books a request for key under alg, in one round trip (see
// store.Store.Reserve): the token bucket and GCRA.
func (s *Store) Reserve(
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
	if err := storecheck.Reserve(alg, s.checkTime(now), cost, maxWait); err != nil {
		return algorithms.Result{}, 0, err
	}
	b := &booking{alg: alg, cost: cost, maxWait: maxWait}
	b.effect, b.now, b.charges = changes, now, true
	b.own[0] = s.Key(k.String(), alg)
	b.rkeys = b.own[:]
	if err := s.do(ctx, b); err != nil {
		return algorithms.Result{}, 0, err
	}
	return b.res, b.delay, nil
}

// booking is the op of a reservation (reserve.lua).
type booking struct {
	request
	own     [1]string // rkeys' array
	alg     algorithms.Algorithm
	cost    int64
	maxWait time.Duration
	res     algorithms.Result
	delay   time.Duration
}

func (b *booking) script() (*redis.Script, error) { return scripts.Reserve(b.alg.Kind()) }

// keys are the state, then with a request ID its once key: a booking is
// an admission, as a decision is.
func (b *booking) keys() []string {
	if once := b.rid.key(b.rkeys[0], onceDecide); once != "" {
		return []string{b.rkeys[0], once}
	}
	return b.rkeys
}

// args are ARGV: now, the cost, the parameters and the longest wait in µs,
// then with a once key the limit and the once key's least lifetime.
func (b *booking) args() []any {
	args := append(appendParams(append(make([]any, 0, 7), b.at, b.cost), b.alg, b.now), b.maxWait.Microseconds())
	if b.rid.id != "" {
		args = append(args, algo.MaxCost(b.alg), b.horizon)
	}
	return args
}

// parse reads reserve.lua's reply: five fields and the delay in µs, then
// with a once key the limit and what the admission charged.
func (b *booking) parse(reply any) error {
	once := b.rid.id != ""
	limit, want := algo.MaxCost(b.alg), 6
	if once {
		want = 10
	}
	fields, err := fieldsOf(reply, want)
	if err != nil {
		return err
	}
	delay, ok := fields[5].(int64)
	if !ok || delay < 0 || delay > int64(algo.EnvelopeMaxWindow/time.Microsecond) {
		return fmt.Errorf("delay %v (reply %v)", fields[5], reply)
	}
	if once {
		if limit, err = limitOf(fields[6], reply); err != nil {
			return err
		}
	}
	res, err := parseReply(fields[:5], limit, b.notBefore)
	if err != nil {
		return err
	}
	if !once {
		res.SetCharged(b.alg, b.cost)
	} else if res, err = chargeOf(res, b.alg, fields[7:10]); err != nil {
		return err
	}
	b.res, b.delay = res, time.Duration(delay)*time.Microsecond
	return nil
}
