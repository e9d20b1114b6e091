// Package algorithms holds ratewise's rate-limiting algorithms as pure
// decision steps.
//
// Each algorithm is a small value type (FixedWindow, SlidingLog,
// SlidingWindow, TokenBucket, GCRA) whose Decide method maps
// (state, now, cost) to (new state, Result). Decide reads no clock, does no
// I/O and starts no goroutine: a store decides where state lives and how the
// step is made atomic, the algorithm decides what the step is. Because the step
// is a plain function, the in-memory store runs it directly and the Redis
// store's Lua scripts are checked against it.
//
// # Resolution
//
// Decisions are computed in whole microseconds with integer arithmetic, the
// finest resolution Redis's TIME command offers. Every store therefore computes
// bit-identical results, and a RetryAfter or ResetAfter is always a whole number
// of microseconds. Durations in parameters must be whole microseconds; anything
// else is rejected by Validate rather than rounded. Parameters large enough
// that an intermediate value could pass 2^53 (the largest integer a Lua number
// holds exactly) are rejected with ErrOutOfRange for the same reason: counts
// and durations in µs up to 2^50, and capacity or burst × period in µs up to
// 2^51 (10^6 tokens per 37 minutes, or 10^4 per 2.6 days).
//
// # Clocks that step back
//
// A now earlier than times already recorded in the state never lets more
// through: recorded requests still count, and RetryAfter and ResetAfter are
// measured from the caller's now, so they include the gap.
package algorithms
