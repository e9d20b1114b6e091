// Package exact states plainly what an exact sliding log decides and how
// much any window holds: the references that ratewise's contract suite and
// its comparison tool judge every algorithm by. It is written for
// obviousness, not to share code with package algorithms, so that the two
// check each other.
package exact

import "time"

// Log is the exact sliding log on one key: a cost admitted at time a counts
// at time t while t-a < Window. With a Quantum, every time is first rounded
// down to a multiple of it, which is the sliding window counter. Times are
// durations since the Unix epoch (any origin for a Quantum of 0) and must
// never go backwards. The zero Quantum means no rounding.
type Log struct {
	Window  time.Duration
	Quantum time.Duration

	at   []time.Duration // admissions still counting, oldest first, from head
	cost []int64
	head int
	sum  int64
}

func (l *Log) round(t time.Duration) time.Duration {
	if l.Quantum > 1 {
		return t - t%l.Quantum
	}
	return t
}

// Sum returns the cost that counts at t.
func (l *Log) Sum(t time.Duration) int64 {
	cutoff := l.round(t) - l.Window
	for l.head < len(l.at) && l.at[l.head] <= cutoff {
		l.sum -= l.cost[l.head]
		l.head++
	}
	if l.head > 64 && l.head*2 > len(l.at) {
		l.at = append(l.at[:0], l.at[l.head:]...)
		l.cost = append(l.cost[:0], l.cost[l.head:]...)
		l.head = 0
	}
	return l.sum
}

// Add records cost at t, whatever the limit.
func (l *Log) Add(t time.Duration, cost int64) {
	l.Sum(t)
	l.at = append(l.at, l.round(t))
	l.cost = append(l.cost, cost)
	l.sum += cost
}

// Decide admits a request of cost at t if what counts plus the cost (at
// least 1, so that a cost of 0 asks about a cost of 1) is at most limit, and
// records an admitted cost. It returns whether it admitted and what remains
// of the limit afterwards, at least 0.
func (l *Log) Decide(limit int64, t time.Duration, cost int64) (allowed bool, remaining int64) {
	sum := l.Sum(t)
	if sum+max(cost, 1) > limit {
		return false, max(0, limit-sum)
	}
	if cost > 0 {
		l.Add(t, cost)
	}
	return true, limit - sum - cost
}

// Event is a cost at a time.
type Event struct {
	At   time.Duration
	Cost int64
}

// MaxInWindow returns the most cost within any half-open span [x, x+window)
// among events, which must be in time order.
func MaxInWindow(events []Event, window time.Duration) int64 {
	var most, sum int64
	lo := 0
	for _, ev := range events {
		sum += ev.Cost
		for events[lo].At+window <= ev.At {
			sum -= events[lo].Cost
			lo++
		}
		most = max(most, sum)
	}
	return most
}
