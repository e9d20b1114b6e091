package replay

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// An explicit number of sub-windows that does not split the window is an
// error naming the count, the window and the nearest counts that do; only
// the default adapts.
func TestConfigureRejectsSubWindowsThatDoNotSplitTheWindow(t *testing.T) {
	cases := []struct {
		name       string
		subWindows int64
		window     time.Duration
		want       []string // in the error
		chosen     int64    // sub-windows when there is no error
	}{
		{name: "7 of a minute", subWindows: 7, window: time.Minute, want: []string{"7 sub-windows", "1m0s", "6 and 8"}},
		{
			name:       "1001 of a second, sub-windows under 1ms",
			subWindows: 1001,
			window:     time.Second,
			want:       []string{"1001 sub-windows", "1s", "1000"},
		},
		{name: "negative", subWindows: -2, window: time.Minute, want: []string{"-2"}},
		{name: "12 of a minute", subWindows: 12, window: time.Minute, chosen: 12},
		{name: "default on a minute", window: time.Minute, chosen: 10},
		{name: "default adapts on 7ms", window: 7 * time.Millisecond, chosen: 7},
		{name: "default adapts on 3ms", window: 3 * time.Millisecond, chosen: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			alg, err := Configure("sliding_window", 100, c.window, Options{SubWindows: c.subWindows})
			if c.want != nil {
				if !errors.Is(err, ErrInvalidOption) {
					t.Fatalf("got %v (%v), want an error wrapping ErrInvalidOption", alg, err)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := algo.ParamsOf(alg).SubWindows; got != c.chosen {
				t.Fatalf("sub-windows: got %d, want %d", got, c.chosen)
			}
		})
	}
	// An invalid limit with sub-windows is the limit's error, not a
	// sub-window count's.
	if _, err := Configure("sliding_window", 0, time.Minute, Options{SubWindows: 6}); !errors.Is(
		err,
		algorithms.ErrInvalidAlgorithm,
	) || !strings.Contains(err.Error(), "limit") || strings.Contains(err.Error(), "sub-windows") {
		t.Errorf("a limit of 0 with 6 sub-windows: got %v, want the limit's error", err)
	}
	// Algorithms without sub-windows ignore the option.
	if _, err := Configure("gcra", 100, time.Minute, Options{SubWindows: 7}); err != nil {
		t.Errorf("gcra with 7 sub-windows: %v", err)
	}
}
