// Package recommend turns the classic decision tree for rate limiters (a
// fixed window counter for simple quotas, a sliding log on a sorted set up
// to about 1,000 QPS with a window up to about 10 s, a sliding window
// counter up to about 10,000 QPS, a token bucket or GCRA beyond) into rules
// over measured figures: given a rate, a window, a precision and a number
// of keys, it tries the candidates that answer the question in order,
// checks each against the memory and time budgets, and gives the figures
// behind every choice and every rejection.
//
// The figures a rule compares with a budget are robust ones: memory is
// what the store reports for a full window (exact on Redis; on PostgreSQL,
// bytes on disk of the key's row), and time is the median of repeated
// samples of the store's own time per decision (Redis's INFO commandstats;
// on PostgreSQL, a statement's round trip), so the same question gets the
// same answer on every run, except where a figure lies within a stated
// margin of a budget, which the decision then says.
//
// On Redis, MeasureCapacity says how many masters the question needs; on
// PostgreSQL, MeasurePostgres sizes the table and the decisions per second.
//
// The rules name no algorithm. They read each one's family and the
// parameters it takes from package algorithms' registry, which puts it in
// a role (a fixed window, an exact log, a sliding window counter, a
// bucket), and print its Go code from its value. An algorithm added to the
// registry is measured, listed and printed with no change here, and tried
// wherever its role is; one of a family no role takes is never
// recommended, and TestEveryKindIsACandidate says so.
package recommend
