package contract

import (
	"math/big"
	"time"
)

// A model is a deliberately naive, obviously correct statement of an
// algorithm's documented semantics: it keeps every admitted request and
// recounts from scratch, or uses exact rationals. The matches_model rule
// compares a store's decisions with it step by step.
type model interface {
	// decide returns whether a request of cost (0 to inspect) is admitted
	// at t, and what remains afterwards. Times never go backwards.
	decide(t time.Time, cost int64) (allowed bool, remaining int64)
}

// logModel is the sliding log: an admitted unit counts while it is younger
// than the window. With a quantum, times are first rounded down to a multiple
// of it since the Unix epoch, which is the sliding window counter.
type logModel struct {
	limit   int64
	window  int64 // µs
	quantum int64 // µs; 1 for the exact log
	records []int64
}

func (m *logModel) decide(t time.Time, cost int64) (bool, int64) {
	now := t.UnixMicro() / m.quantum * m.quantum
	var count int64
	for _, r := range m.records {
		if now-r < m.window {
			count++
		}
	}
	if count+max(cost, 1) > m.limit {
		return false, m.limit - count
	}
	for range cost {
		m.records = append(m.records, now)
	}
	return true, m.limit - count - cost
}

// fixedModel counts per window index.
type fixedModel struct {
	limit  int64
	window int64 // µs
	counts map[int64]int64
}

func (m *fixedModel) decide(t time.Time, cost int64) (bool, int64) {
	w := t.UnixMicro() / m.window
	if m.counts[w]+max(cost, 1) > m.limit {
		return false, m.limit - m.counts[w]
	}
	m.counts[w] += cost
	return true, m.limit - m.counts[w]
}

// bucketModel is the token bucket with exact rational tokens; GCRA is
// documented to admit exactly the same.
type bucketModel struct {
	capacity int64
	perMicro *big.Rat // tokens per µs
	tokens   *big.Rat
	last     int64
}

func newBucketModel(capacity, count int64, period time.Duration) *bucketModel {
	return &bucketModel{
		capacity: capacity,
		perMicro: big.NewRat(count, period.Microseconds()),
		tokens:   new(big.Rat).SetInt64(capacity),
		last:     -1,
	}
}

func (m *bucketModel) decide(t time.Time, cost int64) (bool, int64) {
	now := t.UnixMicro()
	if m.last >= 0 {
		refill := new(big.Rat).Mul(m.perMicro, new(big.Rat).SetInt64(now-m.last))
		m.tokens.Add(m.tokens, refill)
		if full := new(big.Rat).SetInt64(m.capacity); m.tokens.Cmp(full) > 0 {
			m.tokens = full
		}
	}
	m.last = now
	allowed := m.tokens.Cmp(new(big.Rat).SetInt64(max(cost, 1))) >= 0
	if allowed {
		m.tokens.Sub(m.tokens, new(big.Rat).SetInt64(cost))
	}
	whole := new(big.Int).Quo(m.tokens.Num(), m.tokens.Denom())
	return allowed, whole.Int64()
}
