package storeredis

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/requestid"
	"github.com/ratewise/ratewise/internal/storecheck"
)

// Writes that go-redis may send twice: with a client that resends
// commands (MaxRetries above 0, any ClusterClient, whose MaxRedirects also
// counts resends after network errors, or a client the store cannot
// inspect), every write that a resend would apply twice (a charging
// decision, a set's, a booking, a refund, a reset) carries a request ID the
// store makes when the caller gave none, and its script applies it once. The
// record of it is kept at least as long as go-redis may still send the
// command again (resendHorizon), so a resend gets the first outcome instead
// of charging, or giving back, twice. A client that sends each command
// once needs none of this, and costs nothing for it. The decisions a store
// coalesces, of the kinds whose state is one string, need no ID: the
// store records them in the state's own value instead (see writers.go).

// Kinds of once keys, each the state's key followed by the kind and the ID:
// one ID names a request's admission (a decision or a booking), a set's
// decision, a refund of the admission, and a reset.
const (
	onceDecide = ":once:"
	onceSet    = ":once-set:"
	onceRefund = ":once-refund:"
	onceReset  = ":once-reset:"
)

// requestID is a request's ID, from its context or made for it.
type requestID struct {
	id     string
	caller bool // the caller's (ratewise.WithRequestID), not made here
}

// requestID returns ctx's request ID, checked, or a new one if the store
// makes them (its client resends), the request writes and makes is true
// (the store records the op in its state's value instead, see
// writers.go); its id is "" when the request goes without.
func (s *Store) requestID(ctx context.Context, charges, makes bool) (requestID, error) {
	id, ok := requestid.From(ctx)
	if ok {
		if err := storecheck.RequestID(ctx); err != nil {
			return requestID{}, err
		}
	}
	switch {
	case !charges:
		return requestID{}, nil
	case ok:
		return requestID{id: id, caller: true}, nil
	case makes && s.ids != nil:
		return requestID{id: s.ids.next()}, nil
	}
	return requestID{}, nil
}

// idMaker makes the store's request IDs: a random prefix drawn when the
// store is made, unique to it among every store on every server, and a
// counter: one allocation per ID, where a ULID takes a process-wide lock.
type idMaker struct {
	prefix string
	n      atomic.Uint64
}

func newIDMaker() *idMaker {
	var b [9]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on the platforms Go supports
	return &idMaker{prefix: base64.RawURLEncoding.EncodeToString(b[:]) + "."}
}

func (m *idMaker) next() string {
	return m.prefix + strconv.FormatUint(m.n.Add(1), 36)
}

// key returns the once key of kind for the state's key rkey (see
// internal/scripts/once.lua), in rkey's hash tag, or "" for a request without an ID.
func (r requestID) key(rkey, kind string) string {
	if r.id == "" {
		return ""
	}
	return rkey + kind + r.id
}

// decisionFailure is failure for a script that decides, whose error also
// wraps store.ErrMaybeDecided when the script may have run: when go-redis
// may have sent it more than once (its last attempt's error says nothing of
// the first's), or when err says it may have reached Redis (see sent).
func (s *Store) decisionFailure(ctx context.Context, err error) error {
	f := s.failure(ctx, err)
	if !s.resends && !sent(err) {
		return f
	}
	return storecheck.MaybeDecided(f)
}

// resends reports whether go-redis may send a command again after an
// error: MaxRetries above 0, a ClusterClient's MaxRedirects (which also
// counts resends after network errors), or a client it cannot inspect.
func resends(c redis.Scripter) bool {
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
