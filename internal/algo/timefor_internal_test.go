package algo

import (
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

func TestTimeFor(t *testing.T) {
	for _, tt := range []struct {
		rate algorithms.Rate
		n    int64
		want time.Duration
	}{
		{algorithms.PerMinute(10), 3, 18 * time.Second},
		{algorithms.PerSecond(3), 1, 333333 * time.Microsecond},
		{algorithms.Rate{Count: 10_000, Period: 30 * 24 * time.Hour}, 10_000, 30 * 24 * time.Hour},
		{algorithms.Rate{Count: 1, Period: (1 << 50) * time.Microsecond}, 1 << 50, time.Duration(1<<63 - 1)},
	} {
		if got := timeFor(tt.rate, tt.n); got != tt.want {
			t.Errorf("timeFor(%v, %d) = %v, want %v", tt.rate, tt.n, got, tt.want)
		}
	}
}
