package algo

import "time"

// The exactness envelope of package algorithms (see its errors.go), which
// keeps its bounds unexported: every value a step computes stays below
// 2^53, the largest integer a Lua number holds exactly. TestEnvelope holds
// these to what algorithms' Validate accepts.
const (
	// EnvelopeMaxLimit is the largest limit, capacity, burst or rate
	// count: 2^50.
	EnvelopeMaxLimit = 1 << 50
	// EnvelopeMaxWindow is the longest window, rate period, refill time
	// or wait for a booking: 2^50µs.
	EnvelopeMaxWindow = EnvelopeMaxLimit * time.Microsecond
	// EnvelopeMaxUnixMicro is the latest decision time, in µs since the
	// Unix epoch: 2^52 - 1, in September 2112.
	EnvelopeMaxUnixMicro = 1<<52 - 1
	// EnvelopeCompactLogMaxLimit is the largest Limit a CompactLog takes:
	// 2^20.
	EnvelopeCompactLogMaxLimit = 1 << 20
)
