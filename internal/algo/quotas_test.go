package algo_test

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// realQuotas are the rates APIs sell, each with a burst of its whole count.
var realQuotas = []algorithms.Rate{
	{Count: 100_000, Period: 24 * time.Hour},
	{Count: 1_000_000, Period: 24 * time.Hour},
	{Count: 10_000, Period: 30 * 24 * time.Hour},
	{Count: 1_000_000_000, Period: time.Second},
	{Count: 7, Period: 1500 * time.Millisecond},
	{Count: 999_999, Period: 30 * 24 * time.Hour}, // not reducible to small terms
}

// TestRealQuotas runs every bucket rate in realQuotas against exact rational
// arithmetic: admission, Remaining, RetryAfter and ResetAfter, on random
// traffic that drains and refills the bucket.
func TestRealQuotas(t *testing.T) {
	for _, rate := range realQuotas {
		for _, alg := range []algorithms.Algorithm{
			algorithms.TokenBucket{Capacity: rate.Count, Refill: rate},
			algorithms.GCRA{Rate: rate, Burst: rate.Count},
		} {
			t.Run(alg.Kind().String()+"/"+strings.ReplaceAll(rate.String(), "/", " per "), func(t *testing.T) {
				if err := alg.Validate(); err != nil {
					t.Fatal(err)
				}
				r := run{alg: alg}
				m := newRatBucket(rate.Count, rate)
				rng := rand.New(rand.NewPCG(uint64(rate.Count), 5))
				now := t0
				interval := time.Duration(int64(rate.Period/time.Microsecond)/rate.Count) * time.Microsecond
				for step := range 3000 {
					switch rng.IntN(3) {
					case 0:
						now = now.Add(time.Duration(rng.Int64N(int64(max(interval, time.Microsecond)) * 3)).Truncate(time.Microsecond))
					case 1:
						now = now.Add(time.Duration(rng.Int64N(int64(rate.Period) / 4)).Truncate(time.Microsecond))
					}
					cost := rng.Int64N(rate.Count + 1)
					if rng.IntN(2) == 0 {
						cost = rng.Int64N(4)
					}
					got := r.decide(now, cost)
					want := m.decide(now, cost)
					want.SetCharged(alg, cost)
					want.At = got.At
					if got != want {
						t.Fatalf("step %d at +%v, cost %d:\n got  %+v\n want %+v", step, now.Sub(t0), cost, got, want)
					}
				}
			})
		}
	}
}

// TestRealQuotasWindowed: the windowed algorithms take the same quotas as a
// limit per window, and the largest cost, the whole limit, is one record.
func TestRealQuotasWindowed(t *testing.T) {
	for _, rate := range realQuotas {
		for _, alg := range everyAlgorithm(rate.Count, rate.Period)[:2] {
			r := run{alg: alg}
			if res := r.decide(t0, rate.Count); !res.Allowed || res.Remaining != 0 {
				t.Fatalf("%#v: the whole limit at once: %+v", alg, res)
			}
			res := r.decide(t0.Add(time.Microsecond), 1)
			if res.Allowed || res.RetryAfter <= 0 || res.RetryAfter > rate.Period {
				t.Fatalf("%#v: one more: %+v, want denied for at most a window", alg, res)
			}
			if res := r.decide(t0.Add(time.Microsecond+res.RetryAfter), rate.Count); !res.Allowed {
				t.Fatalf("%#v: the whole limit again after RetryAfter: %+v", alg, res)
			}
			if alg.Kind().String() == "sliding_log" && records(r.state) != 1 {
				t.Fatalf("%#v: %d records after two requests a window apart, want 1", alg, records(r.state))
			}
		}
	}
}

// ratBucket is the token bucket in exact rationals, refilled at rate, with
// the burst as capacity: what TokenBucket and GCRA must compute.
type ratBucket struct {
	burst  int64
	perUs  *big.Rat // tokens per µs
	tokens *big.Rat
	last   int64
}

func newRatBucket(burst int64, rate algorithms.Rate) *ratBucket {
	return &ratBucket{
		burst:  burst,
		perUs:  big.NewRat(rate.Count, rate.Period.Microseconds()),
		tokens: new(big.Rat).SetInt64(burst),
		last:   -1,
	}
}

// usUntil returns how long, rounded up to the µs, the bucket takes to gain
// need tokens.
func (m *ratBucket) usUntil(need *big.Rat) int64 {
	us := new(big.Rat).Quo(need, m.perUs)
	q, rem := new(big.Int).QuoRem(us.Num(), us.Denom(), new(big.Int))
	if rem.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

func (m *ratBucket) decide(t time.Time, cost int64) algorithms.Result {
	now := t.UnixMicro()
	full := new(big.Rat).SetInt64(m.burst)
	if m.last >= 0 {
		m.tokens.Add(m.tokens, new(big.Rat).Mul(m.perUs, new(big.Rat).SetInt64(now-m.last)))
		if m.tokens.Cmp(full) > 0 {
			m.tokens.Set(full)
		}
	}
	m.last = now
	res := algorithms.Result{Limit: m.burst}
	need := new(big.Rat).SetInt64(max(cost, 1))
	if m.tokens.Cmp(need) >= 0 {
		res.Allowed = true
		m.tokens.Sub(m.tokens, new(big.Rat).SetInt64(cost))
	} else {
		res.RetryAfter = time.Duration(m.usUntil(new(big.Rat).Sub(need, m.tokens))) * time.Microsecond
	}
	res.ResetAfter = time.Duration(m.usUntil(new(big.Rat).Sub(full, m.tokens))) * time.Microsecond
	res.Remaining = new(big.Int).Quo(m.tokens.Num(), m.tokens.Denom()).Int64()
	return res
}
