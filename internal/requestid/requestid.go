// Package requestid carries a request ID in a context, from
// ratewise.WithRequestID to the stores that apply it at most once.
package requestid

import "context"

// MaxLen is the longest request ID, in bytes, that every store takes
// (store.ErrInvalidRequestID).
const MaxLen = 128

type key struct{}

// With returns a copy of ctx that carries id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, key{}, id)
}

// From returns the request ID ctx carries, and whether it carries one.
func From(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(key{}).(string)
	return id, ok
}
