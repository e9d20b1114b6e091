package storememory_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// BenchmarkChurn passes a wave of a million keys through the store at
// once, each deciding once, then has 10,000 keys make as many decisions
// after the wave has expired, and reports the heap after their sweeps: live-heap-MB. Keys
// that expired are dropped by sweeps, empty chunks go as entries do, and a
// table left mostly empty gets an index of its present size, so the heap
// follows the live keys rather than the wave's peak.
//
//	go test -run XXX -bench Churn -benchtime 1x ./storememory
func BenchmarkChurn(b *testing.B) {
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	const wave, live = 1_000_000, 10_000
	for range b.N {
		t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		clock := ratewisetest.NewClock(t0)
		s := storememory.New(storememory.WithClock(clock))
		for i := range wave {
			if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("wave:", i)}, alg, t0, 1); err != nil {
				b.Fatal(err)
			}
		}
		// 10,000 keys decide 100 times each long after the wave: as many
		// decisions as the wave made, which sweeps every shard.
		end := t0.Add(time.Hour)
		clock.Set(end)
		for i := range 100 * live {
			if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("live:", i%live)}, alg, end, 1); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-heap-MB")
		runtime.KeepAlive(s)
	}
}

// BenchmarkChurnStream passes 5,000,000 keys through the store, each
// deciding once, 100µs apart on the store's clock with a state that counts
// for 1s, so that 10,000 are live at any moment, and reports the heap
// after the last: live-heap-MB. Sweeps drop what expired and empty chunks
// go as keys do, so the heap follows the live keys, not the keys seen.
//
//	go test -run XXX -bench ChurnStream -benchtime 1x ./storememory
func BenchmarkChurnStream(b *testing.B) {
	ctx := context.Background()
	alg := algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 10}
	const keys = 5_000_000
	for range b.N {
		t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
		clock := ratewisetest.NewClock(t0)
		s := storememory.New(storememory.WithClock(clock))
		peak := 0
		for i := range keys {
			now := t0.Add(time.Duration(i) * 100 * time.Microsecond)
			clock.Set(now)
			if _, err := s.Decide(ctx, store.Key{Name: fmt.Sprint("user:", i)}, alg, now, 1); err != nil {
				b.Fatal(err)
			}
			if i%100_000 == 0 {
				peak = max(peak, s.Len())
			}
		}
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-heap-MB")
		b.ReportMetric(float64(peak), "peak-entries")
		runtime.KeepAlive(s)
	}
}
