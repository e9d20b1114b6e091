package replay

import (
	"context"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// Timing is what the timed phase measured for one algorithm on one target.
type Timing struct {
	Target     string        `json:"store"`
	Algorithm  string        `json:"algorithm"`
	Params     string        `json:"params"`
	Goroutines int           `json:"goroutines"`
	Keys       int           `json:"keys"`
	Decisions  int64         `json:"decisions"`
	PerSecond  float64       `json:"decisions_per_second"`
	P50        time.Duration `json:"p50_ns"`
	P99        time.Duration `json:"p99_ns"`
}

// Time runs alg on a fresh instance of t for d on the real clock, from
// goroutines goroutines, each cycling through its share of keys keys, and
// measures decisions per second and the latency of each decision.
func Time(
	ctx context.Context,
	t Target,
	alg algorithms.Algorithm,
	d time.Duration,
	goroutines, keys int,
) (Timing, error) {
	inst, err := t.Open(ctx)
	if err != nil {
		return Timing{}, err
	}
	defer inst.Close()
	s := inst.Store()
	names := make([]string, keys)
	for i := range names {
		names[i] = fmt.Sprintf("user:%d", i+1)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		total    histogram
		firstErr error
		stop     atomic.Bool
	)
	start := time.Now()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h histogram
			for i := g; !stop.Load(); i += goroutines {
				t0 := time.Now()
				_, err := s.Decide(ctx, store.Key{Name: names[i%keys]}, alg, t0, 1)
				h.record(time.Since(t0))
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					stop.Store(true)
				}
			}
			mu.Lock()
			total.merge(&h)
			mu.Unlock()
		}()
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return Timing{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Timing{}, err
	}
	return Timing{
		Target: t.Name(), Algorithm: alg.Kind().String(), Params: algo.ParamsString(alg),
		Goroutines: goroutines, Keys: keys,
		Decisions: total.n, PerSecond: float64(total.n) / elapsed.Seconds(),
		P50: total.quantile(0.50), P99: total.quantile(0.99),
	}, nil
}

// histogram records durations in buckets about 1.6% wide: each power of two
// of nanoseconds is split into 64 linear sub-buckets.
type histogram struct {
	n      int64
	counts [64 * 64]int64
}

func bucketOf(ns int64) int {
	if ns < 64 {
		return int(max(ns, 0))
	}
	exp := bits.Len64(uint64(ns)) - 6 // ns >> exp is in [32, 64)
	return exp*32 + int(ns>>exp)
}

// lowerBound is the smallest duration in bucket b.
func lowerBound(b int) int64 {
	if b < 64 {
		return int64(b)
	}
	exp := b/32 - 1
	return int64(b-exp*32) << exp
}

func (h *histogram) record(d time.Duration) {
	h.counts[bucketOf(int64(d))]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	h.n += o.n
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// quantile returns the middle of the bucket holding the q-quantile.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n-1)) + 1
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := lowerBound(b), lowerBound(b+1)
			return time.Duration((lo + hi) / 2)
		}
	}
	return 0
}
