package storeredis

import (
	"context"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storeredis/internal/denycache"
)

// defaultDenyCache is how many denials a store remembers by default (see
// WithDenyCache).
const defaultDenyCache = 4096

// WithDenyCache sets how many denials the store remembers, to deny again
// without a round trip; n = 0 turns the cache off. The default is 4,096.
//
// When Redis denies a request of cost 1, the key stays denied to requests of
// cost 1 with the same parameters until its RetryAfter has passed, since
// other instances' decisions can only consume more. Only a write that gives
// units back (a refund, a cancellation, a Reset) or another limit on the key
// (a raised rate, say) can admit one sooner; the cache then errs towards
// denying, never towards admitting. Until then the store answers such
// requests itself, from the denial it remembers: the Result is the one Redis
// would give if nothing else reached the key meanwhile (Remaining 0,
// RetryAfter and ResetAfter counting down, At the decision's time). The time
// is the caller's now in client-time mode (WithClientTime; a now before the
// remembered decision goes to Redis), and otherwise the local monotonic
// clock, counted from before the request was sent, so the cache never denies
// past the moment Redis would admit.
//
// Requests of another cost or other parameters, inspections, and requests
// that carry the caller's request ID (a retry must get its admission back)
// go to Redis; so does everything after this store resets, refunds, reserves
// or decides a set on the key. What the cache cannot see is a change made by
// another instance or by hand: a Reset or refund elsewhere, a limit raised
// elsewhere, a key deleted in Redis. Until the remembered RetryAfter has
// passed, this store then still denies what Redis would now admit; it never
// admits anything Redis would deny. Denials that no longer fit are dropped
// in any order.
func WithDenyCache(n int) Option {
	return optionFunc(func(s *Store) { s.denyCache = max(n, 0) })
}

// forget drops the denials remembered for the states of rkeys (see
// WithDenyCache), after a change this store made to them.
func (s *Store) forget(rkeys ...string) {
	if s.deny == nil {
		return
	}
	for _, rkey := range rkeys {
		s.deny.Forget(rkey)
	}
}

// denyClock is the deny cache's clock at now, in µs: the caller's now in
// client-time mode, else the local monotonic clock.
func (s *Store) denyClock(now time.Time) int64 {
	if s.clientTime {
		return now.UnixMicro()
	}
	return denycache.Monotonic()
}

// decideCached is Decide through the deny cache, for a request of positive
// cost without the caller's request ID on the state at rkey: a request of
// cost 1 that a remembered denial covers is answered here, allocating
// nothing (rkey is in the caller's buffer); any other goes to Redis, and
// its outcome updates what the cache remembers. The cache's clock is read
// before the request is sent, so a denial never outlives Redis's.
func (s *Store) decideCached(
	ctx context.Context,
	rkey []byte,
	alg algorithms.Algorithm,
	now time.Time,
	cost int64,
) (algorithms.Result, error) {
	t := s.denyClock(now)
	if cost == 1 {
		if res, ok := s.deny.Deny(rkey, alg, t); ok {
			if err := ctx.Err(); err != nil {
				return algorithms.Result{}, err
			}
			return res, nil
		}
	}
	key := string(rkey)
	gen := s.deny.Generation(key)
	res, err := s.send(ctx, key, alg, now, cost)
	if err == nil {
		s.deny.Remember(key, alg, res, cost, t, gen)
	}
	return res, err
}
