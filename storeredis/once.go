package storeredis

import (
	"context"
	"errors"
	"net"

	"github.com/oklog/ulid/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/store"
)

// WithAutoRequestIDs gives every charging request (Decide, DecideSet and
// Reserve with a cost above 0, and Refund) a request ID when its context
// carries none (store.WithRequestID): a ULID, made for the call. The script
// then applies the request at most once, so a command that go-redis sends
// again after a read timeout or a dropped connection (MaxRetries, and a
// ClusterClient's MaxRedirects) returns the first outcome instead of
// charging twice.
//
// It costs one more key per admission, kept as long as what the admission
// charged counts (under 200 bytes), one more GET and SET inside the script,
// and a ULID in Go; docs/redis.md has the figures. Use it when go-redis
// resends commands: MaxRetries above 0, which rides out a dropped
// connection at the price of latency, and on Redis Cluster, whose client
// resends on MaxRedirects whatever MaxRetries says. Without it, a request
// that carries its own ID is applied once all the same; the others are not
// protected, and a client that resends may charge them twice (see
// CheckClient).
func WithAutoRequestIDs() Option {
	return optionFunc(func(s *Store) { s.autoIDs = true })
}

// Kinds of once keys, each the state's key followed by the kind and the ID:
// one ID names a request's admission (a decision or a booking), a set's
// decision and a refund of the admission.
const (
	onceDecide = ":once:"
	onceSet    = ":once-set:"
	onceRefund = ":once-refund:"
)

// requestID is a request's ID, from its context or made for it.
type requestID struct {
	id     string
	caller bool // the caller's (store.WithRequestID), not made here
}

// requestID returns ctx's request ID, checked, or a new one if the store
// makes them (WithAutoRequestIDs) and the request charges; its id is ""
// when the request goes without.
func (s *Store) requestID(ctx context.Context, charges bool) (requestID, error) {
	id, ok := store.RequestID(ctx)
	if ok {
		if err := store.CheckRequestID(ctx); err != nil {
			return requestID{}, err
		}
	}
	return s.idFor(id, ok, charges), nil
}

// idFor is requestID for the caller's ID id (if given), already checked.
func (s *Store) idFor(id string, given, charges bool) requestID {
	switch {
	case !charges:
		return requestID{}
	case given:
		return requestID{id: id, caller: true}
	case s.autoIDs:
		return requestID{id: ulid.Make().String()}
	}
	return requestID{}
}

// key returns the once key of kind for the state's key rkey (see
// scripts/once.lua), in rkey's hash tag, or "" for a request without an ID.
func (r requestID) key(rkey, kind string) string {
	if r.id == "" {
		return ""
	}
	return rkey + kind + r.id
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
// wraps store.ErrMaybeDecided when the script may have run: when go-redis
// may have sent it more than once (its last attempt's error says nothing of
// the first's), or when err says it may have reached Redis (see sent).
func (s *Store) decisionFailure(ctx context.Context, err error) error {
	f := s.failure(ctx, err)
	if !s.resends && !sent(err) {
		return f
	}
	return &maybeDecidedError{f}
}

// resends reports whether go-redis may send a command again after an
// error: MaxRetries above 0, a ClusterClient's MaxRedirects (which also
// counts resends after network errors), or a client it cannot inspect.
func resends(c Client) bool {
	st, ok := settingsOf(c)
	return !ok || st.retries > 0 || st.cluster && st.redirects > 0
}

// sent reports whether a command that failed with err, sent once, may have
// reached Redis and run. It did not if go-redis could not get a connection
// (a dial error, a pool timeout, a closed client), or if Redis answered
// with an error (the script did not run: NOSCRIPT, CLUSTERDOWN, OOM,
// BUSY...; the scripts check before they write). Any other error, such as
// a read timeout or a connection closed before the reply, may have come
// after Redis ran it.
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
