package algo_test

import (
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// TestEveryKindDecides runs every function of package algo on every kind of
// the registry: each picks the kind's step by a type switch, and a kind one
// of them misses panics here rather than on a store.
func TestEveryKindDecides(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		t.Run(k.String(), func(t *testing.T) {
			alg, err := algo.Nominal(k, 10, time.Second, 5)
			if err != nil {
				t.Fatal(err)
			}
			if err := algo.CheckDecision(alg, t0, 1); err != nil {
				t.Fatal(err)
			}
			if again, err := k.New(algo.ParamsOf(alg)); err != nil || again != alg {
				t.Errorf("New(ParamsOf(%v)) = %v, %v", alg, again, err)
			}
			if q := algo.QuotaOf(alg); q.Limit != 10 || q.Window != time.Second || algo.MaxCost(alg) != 10 {
				t.Errorf("QuotaOf = %+v, MaxCost = %d; want 10 per 1s", q, algo.MaxCost(alg))
			}
			if s := algo.ScopeOf(alg); s.Window != time.Second {
				t.Errorf("ScopeOf = %+v", s)
			}
			if got := algo.WithQuotaLimit(alg, 7); algo.MaxCost(got) != 7 || algo.ScopeOf(got) != algo.ScopeOf(alg) {
				t.Errorf("WithQuotaLimit(7) = %v", got)
			}
			state, res := algo.Decide(alg, nil, t0, 1)
			if !res.Allowed || res.Remaining != 9 {
				t.Fatalf("Decide = %+v", res)
			}
			if !algo.Keeps(alg, state, t0, 0) {
				t.Errorf("an inspection does not keep the state")
			}
			if _, ok := algo.Refund(alg, state, t0, t0, 1); !ok {
				t.Errorf("Refund gave nothing back")
			}
			if algo.Reserves(alg) {
				if _, res, _ := algo.Reserve(alg, nil, t0, 1, time.Second); !res.Allowed {
					t.Errorf("Reserve = %+v", res)
				}
			}
			if !algo.Packs(alg) {
				return
			}
			state, _ = algo.Decide(alg, nil, t0, 1)
			w, tag, ok := algo.Pack(alg, state)
			if !ok {
				t.Fatalf("Pack: no packed form")
			}
			back := algo.Unpack(alg, w, tag, nil)
			if w2, tag2, _ := algo.Pack(alg, algo.Clone(alg, back)); w2 != w || tag2 != tag {
				t.Errorf("Pack(Clone(Unpack(Pack))) = %v %d, want %v %d", w2, tag2, w, tag)
			}
			if res, _ := algo.Inspect(alg, w, tag, t0, 0); res.Remaining != 9 {
				t.Errorf("Inspect = %+v", res)
			}
			d := algo.Derive(alg)
			var packed algorithms.Result
			if _, _, ok := algo.DecidePacked(alg, &d, &w, tag, t0, 1, &packed); !ok || packed.Remaining != 8 {
				t.Errorf("DecidePacked = %+v, %v", packed, ok)
			}
		})
	}
}
