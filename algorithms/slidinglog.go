package algorithms

import "time"

// SlidingLog is the exact sliding window: every admitted request is a record
// with its timestamp and cost, as in the sorted-set design (score =
// timestamp).
//
// Semantics: at time t, records whose age is at least Window (timestamp <=
// t-Window) no longer count, as ZREMRANGEBYSCORE key -inf t-Window removes
// them; a record exactly one window old no longer counts. A request of cost n
// is admitted when the cost of the records still counting plus n is at most
// Limit, and is then recorded at t. Denied requests are not recorded.
//
// Accuracy: exact. No window of length Window, wherever it starts, ever holds
// more than Limit admitted cost.
//
// Cost: one record per admitted request, whatever its cost (requests stamped
// the same microsecond share one), so memory grows with the request rate ×
// Window, up to Limit records per key: 16 B per record in memory, and in
// Redis one sorted-set member, about 96–99 B once a key holds more than 128
// records and 14 B below that (go run ./bench/cmd/rediscost). A decision
// takes O(log n) time for n records and writes at most one record, so the
// largest allowed cost, Limit, costs no more than a cost of 1
// (BenchmarkLargestCost); a request is never split into one record per unit
// of cost, which would let one large cost block Redis.
//
// Changing Limit keeps the records: lowered below what they hold, the key is
// denied until enough of them expire. A now earlier than the latest time the
// key was decided at is decided at that latest time (see "Time that runs backwards" in the package doc).
type SlidingLog struct {
	Limit  int64
	Window time.Duration
}

// Kind returns the registry's "sliding_log".
func (SlidingLog) Kind() *Kind { return slidingLogKind }

// params returns the parameters in their shared form.
// packed returns params() packed.
func (a SlidingLog) packed() packedParams { return pack(a.params()) }

func (a SlidingLog) params() Params { return Params{Limit: a.Limit, Window: a.Window} }

// String describes the algorithm, such as "sliding_log 100/1m".
func (a SlidingLog) String() string { return describe(a) }

func (SlidingLog) sealed() {}

// Validate checks Limit in [1, 2^50] and Window a whole number of
// microseconds in [1µs, 2^50µs].
func (a SlidingLog) Validate() error {
	return FixedWindow(a).Validate()
}
