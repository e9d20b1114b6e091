package algo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// A cost out of range is ErrCostExceedsLimit, and its message says the
// cost and the most the algorithm takes, in words, not as a range of
// negative numbers no caller of a Limiter can pass.
func TestCheckCostSaysWhatIsTooMuch(t *testing.T) {
	alg := algorithms.SlidingLog{Limit: 5, Window: time.Minute}
	for _, tt := range []struct {
		cost int64
		want string
	}{
		{7, "a cost of 7, over the 5 that sliding_log 5/1m takes at once"},
		{-9, "an inspection for a cost of 9, over the 5 that sliding_log 5/1m takes at once"},
	} {
		err := algo.CheckCost(alg, tt.cost)
		if !errors.Is(err, algorithms.ErrCostExceedsLimit) || !strings.HasSuffix(err.Error(), tt.want) {
			t.Errorf("algo.CheckCost(%d): %v, want ErrCostExceedsLimit ending %q", tt.cost, err, tt.want)
		}
	}
	for _, cost := range []int64{-5, 0, 5} {
		if err := algo.CheckCost(alg, cost); err != nil {
			t.Errorf("algo.CheckCost(%d): %v", cost, err)
		}
	}
}
