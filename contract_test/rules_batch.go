package contract

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/store"
)

// poisonedCallers is how many callers decide at once in each round of the
// poisoned_batch rule, every fourth on the poisoned key.
const poisonedCallers = 24

// poisonedBatch is the poisoned_batch rule: rounds of callers that decide
// at once, so that their decisions share round trips, a quarter of them on
// a key the store under test was made to fail (poisoner). Each decision on
// the poisoned key must fail, every other must be admitted, and each other
// key must have been charged exactly what it admitted; until batches have
// formed.
func poisonedBatch(e *env) {
	if !e.cfg.coalesced {
		e.t.Skip("the store does not share round trips (contract.Coalesced)")
	}
	b, ok := e.inner.(batcher)
	if !ok {
		e.fatalf("%T shares round trips and does not count them (Run's Batches)", e.inner)
	}
	p, ok := e.inner.(poisoner)
	if !ok {
		e.fatalf("%T shares round trips and the suite cannot poison one (Run's Poison)", e.inner)
	}
	ctx := context.Background()
	tw := e.twin()
	alg := e.c.build(1000, e.c.window)
	limit := algo.MaxCost(alg)
	l := e.newLimiter(tw.sut, alg, tw.ns)
	heal := p.Poison(e.t, store.Key{Namespace: tw.ns, Name: "poisoned"}, alg)
	defer heal()

	before, beforeDecisions := b.Batches()
	admitted := map[string]int64{}
	rounds := 0
	for ; rounds < 20; rounds++ {
		if batches, _ := b.Batches(); batches-before >= 3 && rounds >= 2 {
			break
		}
		results := make([]ratewise.Result, poisonedCallers)
		errs := make([]error, poisonedCallers)
		keys := make([]string, poisonedCallers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range poisonedCallers {
			keys[i] = fmt.Sprint("k", i%6)
			if i%4 == 0 {
				keys[i] = "poisoned"
			}
			wg.Go(func() {
				cctx, cancel := ctx, context.CancelFunc(func() {})
				if keys[i] == "poisoned" {
					// A poison that holds a row fails its decision by
					// its caller's deadline.
					cctx, cancel = context.WithTimeout(ctx, 250*time.Millisecond)
				}
				defer cancel()
				<-start
				results[i], errs[i] = l.Allow(cctx, keys[i])
			})
		}
		close(start)
		wg.Wait()
		for i, k := range keys {
			switch {
			case k == "poisoned" && errs[i] == nil:
				e.fatalf("round %d: a decision on the poisoned key succeeded (%+v): the poison did not take", rounds+1, results[i])
			case k == "poisoned":
			case errs[i] != nil:
				e.fatalf("round %d: a decision on %q, beside decisions on a poisoned key, failed: %v", rounds+1, k, errs[i])
			case !results[i].Allowed:
				e.fatalf("round %d: a decision on %q was denied under a limit of %d: %+v", rounds+1, k, limit, results[i])
			default:
				admitted[k]++
			}
		}
	}
	batches, decisions := b.Batches()
	if batches == before {
		e.fatalf("%d rounds of %d callers at once formed no batch: the rule did not poison one", rounds, poisonedCallers)
	}
	for k, n := range admitted {
		res, err := l.PeekN(ctx, k, 1)
		if err != nil || res.Remaining != limit-n {
			e.fatalf("%q admitted %d beside a poisoned key; a peek gives %+v, %v, want Remaining %d", k, n, res, err, limit-n)
		}
	}
	e.t.Logf(
		"%d rounds, %d batches of %.1f decisions on average",
		rounds,
		batches-before,
		float64(decisions-beforeDecisions)/float64(batches-before),
	)
}
