package sim

import (
	"sort"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/workload"
)

// Accuracy is what an algorithm decided on a workload, judged against the
// workload's limit.
type Accuracy struct {
	Requests int64 `json:"requests"`
	Admitted int64 `json:"admitted"`
	Denied   int64 `json:"denied"`
	// MaxInWindow is the most cost admitted for one key within any span of
	// the limit's window length, wherever it starts.
	MaxInWindow int64 `json:"max_in_window"`
	// Overshoot is MaxInWindow / Limit: 1.00 or less never exceeds the limit.
	Overshoot float64 `json:"overshoot"`
	// OverLimit counts admissions that took the key's admitted cost in the
	// trailing window above the limit.
	OverLimit int64 `json:"over_limit_admits"`
	// FalseAdmits and FalseDenials compare each decision with the exact
	// sliding log's on the same trace (see Exact): admitted where the log
	// denied, and denied where the log admitted.
	FalseAdmits  int64 `json:"false_admits"`
	FalseDenials int64 `json:"false_denials"`
}

// Exact returns the decisions of an exact sliding log with w's limit on w's
// requests, the reference that Measure compares with. It runs the pure
// algorithm, with no store.
func Exact(w *workload.Workload) []bool {
	alg := algorithms.SlidingLog{Limit: w.Limit, Window: w.Window}
	states := make([]algorithms.State, len(w.Keys))
	allowed := make([]bool, len(w.Requests))
	for i, r := range w.Requests {
		var res algorithms.Result
		states[r.Key], res = alg.Decide(states[r.Key], w.Start.Add(r.At), r.Cost)
		allowed[i] = res.Allowed
	}
	return allowed
}

// Measure computes the accuracy of allowed, the decisions on w's requests,
// against the limit and against exact, the reference decisions from Exact.
func Measure(w *workload.Workload, allowed, exact []bool) Accuracy {
	a := Accuracy{Requests: int64(len(w.Requests))}
	perKey := make([]admitLog, len(w.Keys))
	for i, r := range w.Requests {
		log := &perKey[r.Key]
		log.expire(r.At - w.Window)
		switch {
		case allowed[i] && !exact[i]:
			a.FalseAdmits++
		case !allowed[i] && exact[i]:
			a.FalseDenials++
		}
		if !allowed[i] {
			a.Denied++
			continue
		}
		a.Admitted++
		log.push(r.At, r.Cost)
		if log.sum > w.Limit {
			a.OverLimit++
		}
		a.MaxInWindow = max(a.MaxInWindow, log.sum)
	}
	a.Overshoot = float64(a.MaxInWindow) / float64(w.Limit)
	return a
}

// admitLog is one key's admissions in the trailing window (t-Window, t],
// oldest first.
// Because every span of the window's length that holds the most admissions
// can be taken to end at an admission, the largest sum seen just after a
// push is the windowed maximum.
type admitLog struct {
	at   []time.Duration
	cost []int64
	head int
	sum  int64
}

// expire drops admissions at or before cutoff.
func (l *admitLog) expire(cutoff time.Duration) {
	for l.head < len(l.at) && l.at[l.head] <= cutoff {
		l.sum -= l.cost[l.head]
		l.head++
	}
	if l.head > 64 && l.head*2 > len(l.at) {
		l.at = append(l.at[:0], l.at[l.head:]...)
		l.cost = append(l.cost[:0], l.cost[l.head:]...)
		l.head = 0
	}
}

func (l *admitLog) push(at time.Duration, cost int64) {
	l.at = append(l.at, at)
	l.cost = append(l.cost, cost)
	l.sum += cost
}

// MaxInWindow is the most cost within any span of length window among
// events at the given instants, which must be sorted. It is the metric
// Measure reports, computed on its own for tests and for other callers.
func MaxInWindow(at []time.Duration, cost []int64, window time.Duration) int64 {
	var best, sum int64
	i := 0
	for j := range at {
		sum += cost[j]
		for at[j]-at[i] >= window {
			sum -= cost[i]
			i++
		}
		best = max(best, sum)
	}
	return best
}

// Point is one sample of a Series.
type Point struct {
	At    time.Duration `json:"at"`
	Value int64         `json:"value"`
}

// Series samples the cost in the trailing window (t-Window, t] for key over
// the workload, in buckets equal slices of its duration. Each point is the
// largest value the trailing count takes within its bucket, so no peak is
// lost however short. If allowed is nil, the series counts every request:
// the offered load.
func Series(w *workload.Workload, allowed []bool, key int32, buckets int) []Point {
	var at []time.Duration
	var prefix = []int64{0}
	for i, r := range w.Requests {
		if r.Key == key && (allowed == nil || allowed[i]) {
			at = append(at, r.At)
			prefix = append(prefix, prefix[len(prefix)-1]+r.Cost)
		}
	}
	upto := func(t time.Duration) int { return sort.Search(len(at), func(i int) bool { return at[i] > t }) }
	trailing := func(t time.Duration) int64 { return prefix[upto(t)] - prefix[upto(t-w.Window)] }
	points := make([]Point, buckets)
	step := w.Duration / time.Duration(buckets)
	j := 0
	for b := range points {
		from, to := time.Duration(b)*step, time.Duration(b+1)*step
		v := trailing(from)
		for j < len(at) && at[j] < to {
			if at[j] >= from {
				v = max(v, trailing(at[j]))
			}
			j++
		}
		points[b] = Point{At: from, Value: v}
	}
	return points
}

// Hottest is the key that sends the most requests in w.
func Hottest(w *workload.Workload) int32 {
	counts := make([]int, len(w.Keys))
	best := int32(0)
	for _, r := range w.Requests {
		counts[r.Key]++
		if counts[r.Key] > counts[best] {
			best = r.Key
		}
	}
	return best
}
