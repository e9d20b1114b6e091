package ratewise

import (
	"context"

	"github.com/oklog/ulid/v2"

	"github.com/ratewise/ratewise/store"
)

// WithRequestID returns a copy of ctx that makes the decisions made with it
// (Allow, AllowN, a Stack's, Wait's booking, and Refund) apply at most once:
// while what the first admission charged counts, a request with the same ID
// on the same key and limit (its algorithm kind and window) returns the
// first admission's Result and charges nothing. Denials are not remembered,
// and a Refund with the ID gives the admission back and forgets it. The
// stores of this module keep it (store.Idempotent); see
// store.WithRequestID for the whole rule.
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
//
// Never use an ID a client sends as it comes (an Idempotency-Key header):
// a client that repeats one would never be charged (see
// store.WithRequestID).
func WithRequestID(ctx context.Context, id string) context.Context {
	return store.WithRequestID(ctx, id)
}

// NewRequestID returns a new request ID: a ULID, which is unique, sorts by
// time and is 26 bytes long.
func NewRequestID() string { return ulid.Make().String() }
