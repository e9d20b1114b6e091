// Package algorithms holds ratewise's rate-limiting algorithms: what a
// user configures, checks and reads back.
//
// Each algorithm is a small value type (FixedWindow, SlidingLog,
// CompactLog, SlidingWindow, TokenBucket, GCRA, CalendarWindow) that holds
// its parameters.
// A user builds one, checks it with Validate and hands it to a limiter;
// String describes it. Its decision step maps (state, now, cost) to (new
// state, Result), reads no clock, does no I/O and starts no goroutine: a
// store decides where state lives and how the step is made atomic, the
// algorithm decides what the step is. The in-memory store runs the Go
// step, and the Redis store's Lua steps and the PostgreSQL store's SQL
// steps are checked against it. The steps are ratewise's own business:
// stores reach them through an internal package, and users see only
// Result. This package imports nothing else of ratewise.
//
// # The registry
//
// Kinds lists every algorithm once. Lookup finds one by its name (such as
// "gcra"), and Kind.New builds it from Params, the form every algorithm's
// parameters share, so that a configuration file or a command line can
// name any algorithm without naming its type. The Algorithm interface is
// sealed: only this package's types implement it.
//
// # Resolution and range
//
// Decisions are computed in whole microseconds with integer arithmetic, the
// finest resolution Redis's TIME command offers. Every store therefore computes
// bit-identical results, and a RetryAfter or ResetAfter is always a whole number
// of microseconds. Durations in parameters must be whole microseconds; anything
// else is rejected by Validate rather than rounded.
//
// The Redis scripts compute with Lua numbers, doubles that hold integers
// exactly up to 2^53, so every value stays below that: counts up to 2^50
// (about 1.1×10^15), durations up to 2^50µs (about 35 years), and decision
// times from the Unix epoch to 2^52µs after it (in 2112). Within those bounds
// every rate is exact: a rate is reduced to lowest terms, and products such
// as a burst times a period are divided without ever being formed as one
// number. 100,000 per day, 10,000 per 30 days with a burst of 10,000,
// 10^9 per second and 7 per 1.5s are all exact. The one bound beyond these is
// that a token bucket or GCRA must refill from empty within 2^50µs. A
// parameter outside the envelope fails Validate with ErrInvalidAlgorithm, whose
// message names the bound.
//
// # Time that runs backwards
//
// Concurrent callers reach a key with clock readings out of order (each read
// its clock before the store serialised the decisions), app servers' clocks
// disagree, and a Redis failover can move to a replica whose clock is behind.
// Every algorithm therefore remembers the latest time a request was admitted
// at for the key, or denied at with a cost above 1, and decides a request
// with an earlier now at that latest time (a denial of cost 1 would be the
// same at any earlier time, so it is not remembered). A stale now thus admits exactly what the same request
// would have admitted with the clock held at its latest reading, and never
// more: no sliding log ever holds more than its limit in any window of the
// decision times (Result.At). RetryAfter and ResetAfter are measured from the
// caller's now, so they include the gap, and a caller that waits RetryAfter
// on its own clock is admitted.
//
// The memory is per key and lasts as long as the key's state, ResetAfter. A
// clock that steps back by more than that, for a key idle that long, decides
// at its own time, which can admit again what the forgotten requests used.
// The fixed window keeps counting in the window it recorded rather than the
// latest time; it admits exactly the same.
//
// # Changing limits
//
// State is kept per algorithm and scope (the window or period): 10 per
// second and 1,000 per hour of one algorithm never share a key's state. A
// changed limit, burst, capacity or rate count keeps the state, and what a
// key used carries over in the units the algorithm counts: requests for the
// windows, tokens for the token bucket and GCRA. Lowering never hands back
// quota: a key that has used u of the new limit L has Remaining max(0, L-u),
// and waits until its own expiry (the windows) or the new rate's refill
// (the buckets) frees room under L. Raising keeps u. Every result stays in
// range.
//
// A bucket's rate count is part of its state, so a decision under a new
// rate count, whatever its cost (an inspection and a denial of cost 1
// included), converts the state to it at its own time, in exact tokens, and
// writes it: the change takes effect for a key at the first decision that
// carries it. A state that holds no tokens by then is as no state.
//
// # Refunds
//
// A refund gives back into the state its admission charged, named by the
// admission's Result (Result.Charged), whatever limit the key has since. It
// never lets more through than if the refunded units had never been
// charged: made at once, before time passes or another request is charged,
// it gives back exactly what it names, unless a bucket's rate count has
// changed more than once lately; later it may give back less, and nothing
// once its window has passed or since a bucket was written under another
// rate count, even if it has changed back. Refund each admission at most
// once, by at most its cost, and not after its key was Reset, which forgot
// the charge: a refund then would give back what later requests were
// charged.
//
// Each algorithm's doc says what a refund gives back when.
package algorithms
