// Package grpclimit is ratewise's gRPC server interceptors: it builds a key
// for each call (the method, the peer's address, a metadata value such as
// an API key, or a composite), asks a ratewise.Limiter, and ends over-limit
// calls with codes.ResourceExhausted and a RetryInfo detail whose retry
// delay a client can trust.
//
// It is httplimit for gRPC and shares its machinery, so the two behave
// alike: the RateLimit-Policy and RateLimit fields, with the same quota
// names, go out as the trailers ratelimit-policy and ratelimit on every
// call the interceptor decides, and retry-after on a denial; keys are
// encoded alike; and when the store fails or is slower than the decision
// timeout, a FailureMode decides: fail closed (the default,
// codes.Unavailable), fail open, or fall back to a local in-memory limiter
// with a share of the limit. Every store failure reaches the OnError hook,
// which logs by default, so no failure is ever a silent allow.
//
// A unary call is charged once; a stream once, when it opens, whatever it
// then sends. Several limits apply to a call all or nothing with NewStack
// (on one key) and NewMultiKey (on a key each, such as a limit per API key
// and one per peer).
//
// It is a module of its own, so that the ratewise module does not require
// gRPC.
package grpclimit
