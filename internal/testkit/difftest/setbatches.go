package difftest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// SetDecision is one decision of a batch of sets' decisions.
type SetDecision struct {
	Key  string
	Algs []algorithms.Algorithm
	Now  time.Time
	Cost int64
}

// SetBatcher sends a batch of sets' decisions as one coalesced batch, in
// order, and returns each decision's Results or error.
type SetBatcher func(ctx context.Context, batch []SetDecision) ([][]algorithms.Result, []error)

// SetBatches runs n random sequences of 12 batches of 8 to 40 sets'
// decisions through decide, in client-time mode, and through the memory
// store (the Go steps) one after another in the batch's order, with keys
// under prefix, and requires identical Results. A sequence has five
// subjects, each a key with its own clock: two share a list of kinds (one
// script call of a batch decides both), one has two limits of the same
// kind and different windows, and each subject's limits change now and
// then, so that a batch holds several sets of one list of kinds. A third
// of a subject's decisions come at the instant of its previous one, as the
// decisions of a batch at Redis's TIME all do. Costs go from the smallest
// limit down to an inspection as such a request. 20 sequences make the
// full run.
func SetBatches(t *testing.T, decide SetBatcher, prefix string, n int) {
	run := time.Now().UnixNano() // a server outlives a run under -count
	ms := storememory.New()
	rng := rand.New(rand.NewPCG(9, 10))
	ctx := context.Background()
	type subject struct {
		key     string
		algs    []algorithms.Algorithm
		relimit func() []algorithms.Algorithm
		clock   *Clock
	}
	var decisions, admitted, denied, calls int
	for seq := range n {
		shared := randomSet(rng)
		var subjects []*subject
		for i, kinds := range [][]algorithms.Algorithm{shared, shared, randomSet(rng), pairOfOneKind(rng), randomSet(rng)} {
			relimit := func() []algorithms.Algorithm { return relimited(rng, kinds) }
			subjects = append(subjects, &subject{
				key: fmt.Sprintf("%s:%d:%d:%d", prefix, run, seq, i), algs: relimit(), relimit: relimit, clock: NewClock(rng),
			})
		}
		for b := range 12 {
			var batch []SetDecision
			for range 8 + rng.IntN(33) {
				s := subjects[rng.IntN(len(subjects))]
				if rng.IntN(8) == 0 {
					s.algs = s.relimit()
				}
				maxCost := algo.MaxCost(s.algs[0])
				for _, a := range s.algs {
					maxCost = min(maxCost, algo.MaxCost(a))
				}
				cost := rng.Int64N(maxCost + 1)
				if rng.IntN(6) == 0 {
					cost = -1 - rng.Int64N(maxCost)
				}
				now := s.clock.now
				if rng.IntN(3) > 0 {
					now = s.clock.Step(rng, 2*time.Second)
				} // else the same instant as the subject's last decision, as a hot key's decisions at Redis's TIME are
				batch = append(batch, SetDecision{Key: s.key, Algs: s.algs, Now: now, Cost: cost})
			}
			want := make([][]algorithms.Result, len(batch))
			for i, d := range batch {
				var err error
				if want[i], err = ms.DecideSet(ctx, store.Key{Name: d.Key}, d.Algs, d.Now, d.Cost); err != nil {
					t.Fatalf("sequence %d batch %d decision %d: memory: %v", seq, b, i, err)
				}
			}
			got, errs := decide(ctx, batch)
			families := map[string]bool{}
			for i, d := range batch {
				families[fmt.Sprint(kindsOf(d.Algs))] = true
				decisions++
				all := !slices.ContainsFunc(want[i], func(r algorithms.Result) bool { return !r.Allowed })
				switch {
				case d.Cost > 0 && all:
					admitted++
				case d.Cost > 0:
					denied++
				}
				if errs[i] != nil {
					t.Fatalf(
						"sequence %d batch %d decision %d (set %v cost %d at %s): %v",
						seq,
						b,
						i,
						d.Algs,
						d.Cost,
						d.Now.Format(time.RFC3339Nano),
						errs[i],
					)
				}
				for j := range d.Algs {
					if got[i][j] != want[i][j] {
						t.Fatalf("sequence %d batch %d decision %d (set %v cost %d at %s), limit %d (%s):\n  lua %+v\n  go  %+v",
							seq, b, i, d.Algs, d.Cost, d.Now.Format(time.RFC3339Nano), j, d.Algs[j], got[i][j], want[i][j])
					}
				}
			}
			calls += len(families)
		}
	}
	if n > 0 && (admitted == 0 || denied == 0) {
		t.Fatalf("%d decisions: %d charges admitted, %d denied; want both", decisions, admitted, denied)
	}
	t.Logf(
		"%d sets' decisions in %d batches (%d lists of kinds a batch on average): %d charges admitted, %d denied",
		decisions,
		12*n,
		calls/max(12*n, 1),
		admitted,
		denied,
	)
}

// kindsOf returns the kinds of set's limits, each once, in order of first
// use: a set's script, and its family in a batch.
func kindsOf(set []algorithms.Algorithm) []string {
	var kinds []string
	for _, a := range set {
		if !slices.Contains(kinds, a.Kind().String()) {
			kinds = append(kinds, a.Kind().String())
		}
	}
	return kinds
}

// pairOfOneKind returns two limits of one kind whose windows differ, so
// that they are two states: a per-minute and a per-hour quota, say.
func pairOfOneKind(rng *rand.Rand) []algorithms.Algorithm {
	for {
		set := randomSet(rng)
		other := randomSet(rng)
		for _, a := range other {
			if a.Kind() == set[0].Kind() && algo.ScopeOf(a) != algo.ScopeOf(set[0]) {
				return []algorithms.Algorithm{set[0], a}
			}
		}
	}
}

// relimited returns limits of the kinds and scopes of set, with new
// limits (and bursts) drawn as randomSet draws them: the same states,
// decided under changed limits.
func relimited(rng *rand.Rand, set []algorithms.Algorithm) []algorithms.Algorithm {
	out := make([]algorithms.Algorithm, len(set))
	for i, a := range set {
		k, p := a.Kind(), algo.ParamsOf(a)
		for out[i] == nil {
			p.Limit = 1 + rng.Int64N(8)
			if algo.TakesBurst(k) {
				p.Burst = 1 + rng.Int64N(8)
			}
			out[i], _ = k.New(p)
		}
	}
	return out
}
