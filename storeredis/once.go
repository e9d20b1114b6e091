package storeredis

import (
	"context"
	"errors"
	"net"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/store"
)

// WithRequestIDs gives every charging request (Decide, DecideSet and
// Reserve with a cost above 0, and Refund) a request ID when its context
// carries none (store.WithRequestID): a ULID, made for the call. The script
// then applies the request at most once, so a command that go-redis sends
// again after a read timeout or a dropped connection (its MaxRetries)
// returns the first outcome instead of charging twice.
//
// It costs one more key per admission, kept as long as what the admission
// charged counts (about 100 bytes on Redis 7 for a short window), one more
// GET and SET inside the script, and about a microsecond in Go; docs/redis.md
// has the figures. Use it when go-redis retries (MaxRetries above 0), which
// rides out a failover or a dropped connection at the price of latency.
// Without it, a request that carries its own ID is applied once all the
// same; the others are not protected, and a client that retries may charge
// them twice (see CheckClient).
func WithRequestIDs() Option {
	return optionFunc(func(s *Store) { s.requestIDs = true })
}

// Kinds of once keys, each the state's key followed by the kind and the ID:
// one ID can name a decision, a set's decision and a refund of one request.
const (
	onceDecide = ":once:"
	onceSet    = ":once-set:"
	onceRefund = ":once-refund:"
)

// onceKey returns the once key of a request that charges (see
// scripts/once.lua): rkey, the state's key, followed by kind and the ID,
// in rkey's hash tag. It is "" for a request that carries no ID and gets
// none (WithRequestIDs), and for an inspection. The error is an invalid ID's.
func (s *Store) onceKey(ctx context.Context, rkey, kind string, charges bool) (string, error) {
	id, ok := store.RequestID(ctx)
	if ok {
		if err := store.CheckRequestID(ctx); err != nil {
			return "", err
		}
	}
	if !charges {
		return "", nil
	}
	if !ok {
		if !s.requestIDs {
			return "", nil
		}
		id = ulid.Make().String()
	}
	return rkey + kind + id, nil
}

// maybeDecidedError is a decision's error after its script may have run:
// err, which wraps ErrUnavailable or the caller's context error, and
// store.ErrMaybeDecided.
type maybeDecidedError struct{ err error }

func (e *maybeDecidedError) Error() string {
	return e.err.Error() + " (the request may have been decided)"
}

func (e *maybeDecidedError) Unwrap() []error { return []error{e.err, store.ErrMaybeDecided} }

// decisionFailure is failure for a script that decides, whose error also
// wraps store.ErrMaybeDecided when the script may have run (see sent).
func (s *Store) decisionFailure(ctx context.Context, err error) error {
	f := s.failure(ctx, err)
	if !sent(err) {
		return f
	}
	return &maybeDecidedError{f}
}

// sent reports whether a command that failed with err may have reached
// Redis and run. It did not if go-redis could not get a connection (a dial
// error, a pool timeout, a closed client), or if Redis answered with an
// error (the script did not run: NOSCRIPT, CLUSTERDOWN, OOM, BUSY...; the
// scripts check before they write). Any other error, such as a read timeout
// or a connection closed before the reply, may have come after Redis ran
// it.
func sent(err error) bool {
	var op *net.OpError
	var reply redis.Error
	switch {
	case errors.As(err, &op) && op.Op == "dial",
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrClosed),
		errors.As(err, &reply):
		return false
	}
	return true
}

var _ store.Idempotent = (*Store)(nil)

// AppliesRequestIDs marks the store as store.Idempotent.
func (s *Store) AppliesRequestIDs() {}
