package replay_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/storememory"
)

// Replay a recorded trace of logins against candidate limits, to choose one
// that holds the policy "at most 5 logins per IP in any 15 minutes" and
// admits as much as it allows. The trace is a file of "<seconds> <ip>"
// lines; every candidate runs on a fresh in-memory store on the trace's own
// clock, so the figures are exact and the same on every run.
func Example() {
	ctx := context.Background()
	policy := workload.Limit{Count: 5, Window: 15 * time.Minute}
	f, err := os.Open("testdata/logins.log")
	if err != nil {
		panic(err)
	}
	defer f.Close()
	w, err := workload.ReadTrace(f, "logins", policy)
	if err != nil {
		panic(err)
	}

	candidates := []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 5, Window: 15 * time.Minute},
		algorithms.GCRA{Rate: algorithms.Rate{Count: 5, Period: 15 * time.Minute}, Burst: 5},
		algorithms.GCRA{Rate: algorithms.Rate{Count: 5, Period: 15 * time.Minute}, Burst: 3},
		algorithms.SlidingWindow{Limit: 5, Window: 15 * time.Minute, SubWindows: 15},
		algorithms.SlidingLog{Limit: 5, Window: 15 * time.Minute},
	}
	var chosen algorithms.Algorithm
	var best replay.Accuracy
	for _, alg := range candidates {
		acc, err := replay.Replay(ctx, storememory.New(), w, alg)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-14s %-28s admitted %2d of %d, at most %.2f× the policy\n",
			alg.Kind().String(), algo.ParamsString(alg), acc.Admitted, acc.Requests, acc.Overshoot)
		if acc.Overshoot <= 1 && (chosen == nil || acc.Admitted > best.Admitted) {
			chosen, best = alg, acc
		}
	}
	if best.Overshoot > 1.00 {
		panic("the chosen limit admits more than the policy allows")
	}
	fmt.Printf("chosen: %s %s, %.2f×\n", chosen.Kind().String(), algo.ParamsString(chosen), best.Overshoot)
	// Output:
	// fixed_window   5/15m                        admitted 41 of 169, at most 1.40× the policy
	// gcra           5/15m burst 5                admitted 48 of 169, at most 1.80× the policy
	// gcra           5/15m burst 3                admitted 43 of 169, at most 1.40× the policy
	// sliding_window 5/15m in 15 sub-windows      admitted 38 of 169, at most 1.40× the policy
	// sliding_log    5/15m                        admitted 38 of 169, at most 1.00× the policy
	// chosen: sliding_log 5/15m, 1.00×
}
