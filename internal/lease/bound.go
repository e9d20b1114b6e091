package lease

import (
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// Excess is an admission that makes some span hold more than its
// algorithm allows.
type Excess struct {
	Index int   // the admission's index in the times checked
	At    int64 // its time, µs
	// Used is, for the bucket, the tokens used with it counted (over the
	// burst); for the fixed window, its window's count with it (over the
	// limit).
	Used float64
}

// Excesses checks the times of admissions of cost 1 under alg (token
// bucket, GCRA or fixed window), in µs and in nondecreasing order, against
// alg's bound, and returns every admission over it, each then counted as
// if it had been denied. Excesses is how the fleet tests and the lease
// demo check a fleet's admissions, whoever decided them.
//
// For the bucket it runs the naive token bucket over the times in
// integers: tokens used are held in 1/p of a token and drain k per µs
// (the rate k per p µs in lowest terms). Used never passing the burst is
// the same as every closed span [a, b] holding at most Burst + (b-a)/T
// admissions. For the fixed window it counts each window against Limit.
func Excesses(alg algorithms.Algorithm, ats []int64) []Excess {
	p := algo.ParamsOf(alg)
	limit := algo.MaxCost(alg)
	var out []Excess
	if algo.FamilyOf(alg.Kind()) == algo.FamilyFixedWindow {
		w := p.Window.Microseconds()
		counts := map[int64]int64{}
		for i, at := range ats {
			if c := counts[at/w] + 1; c > limit {
				out = append(out, Excess{Index: i, At: at, Used: float64(c)})
				continue
			}
			counts[at/w]++
		}
		return out
	}
	period := p.Window.Microseconds()
	g := gcd(p.Limit, period)
	k, pp := p.Limit/g, period/g
	var used, last int64
	for i, at := range ats {
		if dt := at - last; i > 0 && dt > 0 && used > 0 {
			if dt >= used/k+1 {
				used = 0
			} else {
				used = max(used-dt*k, 0)
			}
		}
		last = at
		if used+pp > limit*pp {
			out = append(out, Excess{Index: i, At: at, Used: float64(used+pp) / float64(pp)})
			continue
		}
		used += pp
	}
	return out
}
