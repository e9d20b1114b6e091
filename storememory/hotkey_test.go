package storememory_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/storememory"
)

// BenchmarkHotKey has 64 goroutines decide on one key, at 1,000 per minute,
// so that it spends the run over its limit, as bench/peers measures a hot
// key against x/time/rate:
//
//	go test -run XXX -bench HotKey ./storememory
func BenchmarkHotKey(b *testing.B) {
	const goroutines = 64
	for _, k := range algorithms.Kinds() {
		alg, err := algo.Nominal(k, 1000, time.Minute, 10)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("alg="+k.String(), func(b *testing.B) {
			l, err := ratewise.New(storememory.New(), alg)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism((goroutines + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := l.Allow(context.Background(), "hot"); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
