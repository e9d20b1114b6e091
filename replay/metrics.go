package replay

import (
	"sort"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/exact"
	"github.com/ratewise/ratewise/replay/workload"
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
// requests, the reference that Measure compares with: package exact's log,
// with no store and no algorithm of ours.
func Exact(w *workload.Workload) []bool {
	logs := make([]exact.Log, len(w.Keys))
	allowed := make([]bool, len(w.Requests))
	for i, r := range w.Requests {
		log := &logs[r.Key]
		log.Window = w.Window
		allowed[i], _ = log.Decide(w.Limit, r.At, r.Cost)
	}
	return allowed
}

// Measure computes the accuracy of allowed, the decisions on w's requests,
// against the limit and against exact, the reference decisions from Exact.
// Because every span of the window's length that holds the most admissions
// can be taken to end at an admission, the largest trailing sum seen just
// after an admission is the windowed maximum.
func Measure(w *workload.Workload, allowed, exactly []bool) Accuracy {
	a := Accuracy{Requests: int64(len(w.Requests))}
	perKey := make([]exact.Log, len(w.Keys))
	for i, r := range w.Requests {
		switch {
		case allowed[i] && !exactly[i]:
			a.FalseAdmits++
		case !allowed[i] && exactly[i]:
			a.FalseDenials++
		}
		if !allowed[i] {
			a.Denied++
			continue
		}
		a.Admitted++
		log := &perKey[r.Key]
		log.Window = w.Window
		log.Add(r.At, r.Cost)
		sum := log.Sum(r.At)
		if sum > w.Limit {
			a.OverLimit++
		}
		a.MaxInWindow = max(a.MaxInWindow, sum)
	}
	a.Overshoot = float64(a.MaxInWindow) / float64(w.Limit)
	return a
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
