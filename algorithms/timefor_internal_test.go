package algorithms

import (
	"testing"
	"time"
)

func TestTimeFor(t *testing.T) {
	for _, tt := range []struct {
		rate Rate
		n    int64
		want time.Duration
	}{
		{PerMinute(10), 3, 18 * time.Second},
		{PerSecond(3), 1, 333333 * time.Microsecond},
		{Rate{Count: 10_000, Period: 30 * 24 * time.Hour}, 10_000, 30 * 24 * time.Hour},
		{Rate{Count: 1, Period: (1 << 50) * time.Microsecond}, 1 << 50, time.Duration(1<<63 - 1)},
	} {
		if got := tt.rate.timeFor(tt.n); got != tt.want {
			t.Errorf("%v.timeFor(%d) = %v, want %v", tt.rate, tt.n, got, tt.want)
		}
	}
}
