package pgsql_test

import (
	"slices"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// logStep is one decision of a scripted sequence: at µs after its start,
// under a limit of limit, of cost cost.
type logStep struct {
	at, limit, cost int64
}

// logScript runs steps on a fresh key of s and on the Go step, with the
// algorithm mk returns for each step's limit, and fails t at the first
// Result that differs. It returns the key's SQL state.
func logScript(
	t *testing.T,
	s *steps,
	key string,
	mk func(limit int64) algorithms.Algorithm,
	steps []logStep,
) []int64 {
	t.Helper()
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var state algo.State
	for i, st := range steps {
		alg := mk(st.limit)
		now := start.Add(time.Duration(st.at) * time.Microsecond)
		var want algorithms.Result
		state, want = algo.Decide(alg, state, now, st.cost)
		got, err := s.Decide(t.Context(), store.Key{Name: key}, alg, now, st.cost)
		if err != nil {
			t.Fatalf("%v step %d: %v", alg, i, err)
		}
		if got != want {
			t.Fatalf("%v step %d (%+v):\n  got %+v\n  go  %+v", alg, i, st, got, want)
		}
	}
	return s.states[key]
}

// TestLogDenialDropsExpired holds the log's steps to Go where dropping the
// expired records shows: a denial of cost 1 drops them but leaves the
// latest time, so a request with an earlier clock reading, after the limit
// was raised, no longer counts them; and the array drops every expired
// record on a write, where log.lua trims at most 1,000 a call.
func TestLogDenialDropsExpired(t *testing.T) {
	p, kinds := pool(t)
	for _, name := range []string{"sliding_log", "sliding_window"} {
		if !slices.ContainsFunc(kinds, func(k *algorithms.Kind) bool { return k.String() == name }) {
			t.Skipf("%s not among RATEWISE_PG_KINDS", name)
		}
	}
	s := &steps{pool: p, states: map[string][]int64{}}
	// Both kinds with a window of 2,000 units of their quantum.
	kinds = []*algorithms.Kind{algorithms.SlidingLog{}.Kind(), algorithms.SlidingWindow{}.Kind()}
	for _, k := range kinds {
		q := int64(1)
		mk := func(limit int64) algorithms.Algorithm {
			return algorithms.SlidingLog{Limit: limit, Window: 2000 * time.Microsecond}
		}
		if k.String() == "sliding_window" {
			q = 1000
			mk = func(limit int64) algorithms.Algorithm {
				return algorithms.SlidingWindow{Limit: limit, Window: 2 * time.Second, SubWindows: 2000}
			}
		}
		t.Run(k.String(), func(t *testing.T) {
			// Cost 2 at 0, 1 at 1,000; at 2,100 quanta the first record has
			// expired, and a request of cost 1 under a limit of 1 is denied;
			// then a request with the clock at 1,600, after the latest time
			// 1,000, under a limit of 3, counts 1, not 3.
			logScript(t, s, "log:small:"+k.String(), mk, []logStep{
				{0, 3, 2}, {1000 * q, 3, 1}, {2100 * q, 1, 1}, {1600 * q, 3, 1}, {1600 * q, 3, 0},
			})

			// 1,500 records of cost 1, one per quantum; at 3,300 quanta the
			// first 1,301 have expired (more than log.lua trims at once),
			// and a request of cost 1 under a limit of 199 is denied and
			// drops them all; an inspection and an admission at 2,600
			// under a limit of 2,000 count only the 199, not 899.
			var script []logStep
			for i := range int64(1500) {
				script = append(script, logStep{i * q, 2000, 1})
			}
			script = append(script, logStep{3300 * q, 199, 1}, logStep{2600 * q, 2000, -1}, logStep{2600 * q, 2000, 1})
			state := logScript(t, s, "log:large:"+k.String(), mk, script)
			if got, want := len(state), 2+2*200; got != want {
				t.Errorf("state of %d elements, want %d: every expired record dropped, one added", got, want)
			}
		})
	}
}
