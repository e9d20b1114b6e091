package ratewise

import (
	"context"

	"github.com/oklog/ulid/v2"

	"github.com/ratewise/ratewise/internal/requestid"
)

// WithRequestID returns a copy of ctx that carries id, which identifies one
// request across its retries, so that it is applied at most once. A store
// that charges a request with an ID (a decision, a Stack's, or a booking,
// with a cost above 0) applies the ID at most once per state: while what the first admission charged still counts (its
// Result.ResetAfter), a request with the same ID on the same key, algorithm
// kind and scope (or Stack) returns the first admission's
// results, and what it charged, and charges nothing, whether it is a
// decision or a booking. A denial is not remembered, so a denied request
// retried later is decided afresh, and Wait can carry one ID.
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
// go-redis's retries on, or on Redis Cluster) keeps a record of every write
// that carries no ID, for as long as the client may resend it, so that the
// client's resends are applied once too.
//
// Any string of 1 to 128 bytes will do, such as a ULID. Use one
// ID per request: two requests with one ID are charged once. So never take
// an ID from untrusted input as it comes, such as a client's
// Idempotency-Key header, or the client can reuse one ID for every request
// and never be charged: use it only where the application itself answers a
// repeated key without doing the work again, prefixed with the
// authenticated principal.
//
// Give each request its own ID, such as NewRequestID's, and reuse it only
// to retry that request, with a context that has time left:
//
//	id := ratewise.NewRequestID()
//	res, err := limiter.Allow(ratewise.WithRequestID(ctx, id), user)
//	if errors.Is(err, store.ErrMaybeDecided) {
//		retry, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
//		defer cancel()
//		res, err = limiter.Allow(ratewise.WithRequestID(retry, id), user) // the first outcome, if there was one
//	}
func WithRequestID(ctx context.Context, id string) context.Context {
	return requestid.With(ctx, id)
}

// NewRequestID returns a new request ID: a ULID, which is unique, sorts by
// time and is 26 bytes long.
func NewRequestID() string { return ulid.Make().String() }
