package store

import (
	"context"
	"errors"
)

// ErrMaybeDecided is wrapped, with ErrUnavailable or the caller's context
// error, when a request may have reached the store and its answer did not
// come back: a read timed out, the connection closed after the request was
// sent, the caller's deadline passed while it waited, or a client that
// resends failed on some attempt. The store may have decided it, and
// charged it. An error without it means nothing was decided.
//
// A request that carries a request ID (WithRequestID) can be retried with
// the same ID: a store that applied it returns the first outcome, one that
// did not decides it now. Without an ID, retrying such a request may charge
// it twice.
var ErrMaybeDecided = errors.New("ratewise: request may have been decided")

// ErrInvalidRequestID is wrapped by the error a store returns for a request
// ID that is empty or longer than MaxRequestIDLen bytes.
var ErrInvalidRequestID = errors.New("ratewise: invalid request ID")

// MaxRequestIDLen is the longest request ID, in bytes.
const MaxRequestIDLen = 128

type requestIDKey struct{}

// WithRequestID returns a copy of ctx that carries id, which identifies one
// request across its retries. A store that charges a request with an ID
// (Decide, DecideSet or Reserve with a cost above 0) applies the ID at most
// once per state: while what the first admission charged still counts (its
// Result.ResetAfter), a request with the same ID on the same key, algorithm
// kind and scope (or set, for DecideSet) returns the first admission's
// results, and what it charged, and charges nothing, whether it is a
// decision or a booking. A denial is not remembered, so a denied request
// retried later is decided afresh, and Limiter.Wait can carry one ID.
// Inspections (a cost of 0 or less) charge nothing and ignore the ID, which
// must still be valid.
//
// A Refund with the ID of an admission gives it back and forgets it, so
// that the request, retried, is charged again; the refund itself applies at
// most once, and a retry of it returns its first Result. A Reset with an ID
// is applied once while the state it deleted would have counted: retried,
// it does not forget what was charged after it.
//
// A store whose client may send a command twice (the Redis store with
// go-redis's retries on, or on Redis Cluster) gives every write that carries
// no ID one of its own, kept at least as long as the client may resend it,
// so that the client's resends are applied once too.
//
// Any string of 1 to MaxRequestIDLen bytes will do, such as a ULID. Use one
// ID per request: two requests with one ID are charged once. So never take
// an ID from untrusted input as it comes, such as a client's
// Idempotency-Key header, or the client can reuse one ID for every request
// and never be charged: use it only where the application itself answers a
// repeated key without doing the work again, prefixed with the
// authenticated principal.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the request ID ctx carries (WithRequestID), and whether
// it carries one.
func RequestID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(requestIDKey{}).(string)
	return id, ok
}

// Idempotent is an optional capability: a store that applies a request that
// carries a request ID at most once, as WithRequestID describes, and
// rejects an ID of 0 or more than MaxRequestIDLen bytes with
// ErrInvalidRequestID. A store without it ignores request IDs.
type Idempotent interface {
	// AppliesRequestIDs does nothing; its presence is the promise.
	AppliesRequestIDs()
}
