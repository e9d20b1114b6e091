package algorithms

import (
	"fmt"
	"time"
)

// CompactLog is the exact sliding log in a ring of timestamps: it decides
// exactly as SlidingLog does, Result for Result, on every input, but keeps
// one 8-byte timestamp per unit of admitted cost still counting, at most
// Limit of them, instead of a sorted set.
//
// Semantics and accuracy: SlidingLog's. No window of length Window ever
// holds more than Limit admitted cost.
//
// Cost: one 8-byte timestamp per unit of admitted cost still counting, in a
// ring that grows by half as the key uses it, up to Limit (or the largest
// Limit the key had while its timestamps counted): on Redis one string, read
// and written a slot at a time with GETRANGE and SETRANGE, 8.2–8.7 B per
// request of cost 1 against a sorted set's 94–106 (go run
// ./bench/cmd/thresholds); in memory a slice of int64. A decision reads O(1) slots, and O(log k) more when k timestamps
// expired since the key's last write, whatever the number of records. A
// request of cost n writes n timestamps, so, unlike SlidingLog, a large
// cost costs more than a small one: choose SlidingLog when single requests
// weigh thousands of units.
//
// Changing Limit keeps the timestamps, as SlidingLog keeps its records; a
// key whose limit was lowered keeps its larger ring until the key is idle
// for a window and its state goes. A now earlier than the latest time the key was decided at
// is decided at that latest time (see "Time that runs backwards" in the package doc).
type CompactLog struct {
	Limit  int64
	Window time.Duration
}

// Kind returns the registry's "compact_log".
func (CompactLog) Kind() *Kind { return compactLogKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a CompactLog) packed() packedParams { return pack(a.params()) }

func (a CompactLog) params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// String describes the algorithm, such as "compact_log 100/1m".
func (a CompactLog) String() string { return describe(a) }

func (CompactLog) sealed() {}

// compactLogMaxLimit is the largest Limit a CompactLog takes: 2^20, a ring
// of 8 MiB, which holds 10 requests a second for a day. Above it, the ring
// and the cost of writing a large request outgrow what one Redis string
// and one script should carry; use SlidingLog.
const compactLogMaxLimit = 1 << 20

// Validate checks Limit in [1, 2^20] and Window a whole
// number of microseconds in [1µs, 2^50µs].
func (a CompactLog) Validate() error {
	if a.Limit > compactLogMaxLimit {
		return fmt.Errorf(
			"%w: compact_log keeps one timestamp per unit, at most %d, got a limit of %d",
			ErrInvalidAlgorithm,
			compactLogMaxLimit,
			a.Limit,
		)
	}
	return FixedWindow(a).Validate()
}
