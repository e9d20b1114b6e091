package algo_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		alg  algorithms.Algorithm
		want error
	}{
		{"fixed window limit 0", algorithms.FixedWindow{Limit: 0, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{"fixed window limit -3", algorithms.FixedWindow{Limit: -3, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{"fixed window window 0", algorithms.FixedWindow{Limit: 1, Window: 0}, algorithms.ErrInvalidAlgorithm},
		{"fixed window window -1s", algorithms.FixedWindow{Limit: 1, Window: -time.Second}, algorithms.ErrInvalidAlgorithm},
		{"fixed window window 1500ns", algorithms.FixedWindow{Limit: 1, Window: 1500}, algorithms.ErrInvalidAlgorithm},
		{
			"fixed window limit above 2^50",
			algorithms.FixedWindow{Limit: 1<<50 + 1, Window: time.Second},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"fixed window window above 2^50µs",
			algorithms.FixedWindow{Limit: 1, Window: (1<<50 + 1) * time.Microsecond},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket rate count above 2^50",
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.PerSecond(1<<50 + 1)},
			algorithms.ErrInvalidAlgorithm,
		},
		{"sliding log limit 0", algorithms.SlidingLog{Limit: 0, Window: time.Second}, algorithms.ErrInvalidAlgorithm},
		{"sliding log window 0", algorithms.SlidingLog{Limit: 1, Window: 0}, algorithms.ErrInvalidAlgorithm},
		{
			"sliding window limit 0",
			algorithms.SlidingWindow{Limit: 0, Window: time.Second, SubWindows: 10},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window window 0",
			algorithms.SlidingWindow{Limit: 1, Window: 0, SubWindows: 10},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window 0 sub-windows",
			algorithms.SlidingWindow{Limit: 1, Window: time.Second, SubWindows: 0},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window -2 sub-windows",
			algorithms.SlidingWindow{Limit: 1, Window: time.Second, SubWindows: -2},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window sub-window under 1ms",
			algorithms.SlidingWindow{Limit: 1, Window: 10 * time.Millisecond, SubWindows: 20},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window uneven split",
			algorithms.SlidingWindow{Limit: 1, Window: time.Second, SubWindows: 7},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"sliding window sub-window not whole µs",
			algorithms.SlidingWindow{Limit: 1, Window: 2001 * time.Microsecond, SubWindows: 2},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket capacity 0",
			algorithms.TokenBucket{Capacity: 0, Refill: algorithms.PerSecond(1)},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket rate 0",
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.PerSecond(0)},
			algorithms.ErrInvalidAlgorithm,
		},
		{"token bucket zero rate", algorithms.TokenBucket{Capacity: 1}, algorithms.ErrInvalidAlgorithm},
		{
			"token bucket period 0",
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.Rate{Count: 1}},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket period -1s",
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.Rate{Count: 1, Period: -time.Second}},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket refills in over 2^50µs",
			algorithms.TokenBucket{Capacity: 1 << 19, Refill: algorithms.PerHour(1)},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket capacity above 2^50",
			algorithms.TokenBucket{Capacity: 1<<50 + 1, Refill: algorithms.Rate{Count: 1 << 50, Period: time.Microsecond}},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"token bucket period above 2^50µs",
			algorithms.TokenBucket{Capacity: 1, Refill: algorithms.Rate{Count: 1, Period: (1<<50 + 1) * time.Microsecond}},
			algorithms.ErrInvalidAlgorithm,
		},
		{"gcra burst 0", algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 0}, algorithms.ErrInvalidAlgorithm},
		{"gcra burst -1", algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: -1}, algorithms.ErrInvalidAlgorithm},
		{"gcra rate 0", algorithms.GCRA{Rate: algorithms.PerSecond(0), Burst: 1}, algorithms.ErrInvalidAlgorithm},
		{"gcra period 0", algorithms.GCRA{Rate: algorithms.Rate{Count: 1}, Burst: 1}, algorithms.ErrInvalidAlgorithm},
		{
			"gcra drains in over 2^50µs",
			algorithms.GCRA{Rate: algorithms.PerHour(1), Burst: 1 << 19},
			algorithms.ErrInvalidAlgorithm,
		},
		{
			"gcra burst above 2^50",
			algorithms.GCRA{Rate: algorithms.Rate{Count: 1 << 50, Period: time.Microsecond}, Burst: 1<<50 + 1},
			algorithms.ErrInvalidAlgorithm,
		},
		{"valid fixed window", algorithms.FixedWindow{Limit: 1, Window: time.Microsecond}, nil},
		{"valid sliding window", algorithms.SlidingWindow{Limit: 1, Window: time.Second, SubWindows: 1000}, nil},
		{"valid token bucket", algorithms.TokenBucket{Capacity: 1 << 18, Refill: algorithms.PerHour(1)}, nil},
		{
			"valid token bucket 10^9 per second",
			algorithms.TokenBucket{Capacity: 1e9, Refill: algorithms.PerSecond(1e9)},
			nil,
		},
		{
			"valid gcra 10,000 per 30 days",
			algorithms.GCRA{Rate: algorithms.Rate{Count: 10_000, Period: 30 * 24 * time.Hour}, Burst: 10_000},
			nil,
		},
		{
			"valid gcra 2^50 per 2^50µs",
			algorithms.GCRA{Rate: algorithms.Rate{Count: 1 << 50, Period: (1 << 50) * time.Microsecond}, Burst: 1 << 50},
			nil,
		},
		{
			"valid fixed window 2^50 per 2^50µs",
			algorithms.FixedWindow{Limit: 1 << 50, Window: (1 << 50) * time.Microsecond},
			nil,
		},
		{"valid gcra", algorithms.GCRA{Rate: algorithms.PerSecond(3), Burst: 1}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.alg.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestRate(t *testing.T) {
	if got, want := algorithms.PerMinute(10).String(), "10/1m"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

// run feeds one key's decisions through alg, keeping the state as a store
// would.
// decision returns r without what it charged (Result.Charged), which
// names the algorithm, to compare two algorithms' decisions.
func decision(r algorithms.Result) algorithms.Result {
	return algorithms.Result{
		Allowed:    r.Allowed,
		Limit:      r.Limit,
		Remaining:  r.Remaining,
		RetryAfter: r.RetryAfter,
		ResetAfter: r.ResetAfter,
		At:         r.At,
	}
}

type run struct {
	alg   algorithms.Algorithm
	state algo.State
}

func (r *run) decide(now time.Time, cost int64) algorithms.Result {
	var res algorithms.Result
	r.state, res = algo.Decide(r.alg, r.state, now, cost)
	return res
}

func TestTokenBucketFractionalRefill(t *testing.T) {
	r := run{alg: algorithms.TokenBucket{Capacity: 2, Refill: algorithms.PerSecond(5)}}
	r.decide(t0, 2)
	// 100ms refills half a token: not enough.
	res := r.decide(t0.Add(100*time.Millisecond), 1)
	if res.Allowed || res.RetryAfter != 100*time.Millisecond {
		t.Fatalf("after 100ms: %+v, want denied with RetryAfter 100ms", res)
	}
	// The half token was kept, not lost: 100ms more completes it.
	if res := r.decide(t0.Add(200*time.Millisecond), 1); !res.Allowed || res.ResetAfter != 400*time.Millisecond {
		t.Fatalf("after 200ms: %+v, want admitted with ResetAfter 400ms", res)
	}
}

// TestNoDrift uses a rate whose interval is not a whole microsecond (3 per
// second): three intervals must add up to exactly one second, so a request of
// cost 3 every second for an hour is always admitted. Rounding the interval
// up to 333334µs would deny it from the first second on.
func TestNoDrift(t *testing.T) {
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(3), Burst: 3},
		algorithms.TokenBucket{Capacity: 3, Refill: algorithms.PerSecond(3)},
	} {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			r := run{alg: alg}
			for s := range 3600 {
				if res := r.decide(t0.Add(time.Duration(s)*time.Second), 3); !res.Allowed {
					t.Fatalf("cost 3 at second %d denied: %+v", s, res)
				}
			}
			// One token takes 333333.33µs after the last burst.
			last := t0.Add(3599 * time.Second)
			if res := r.decide(last.Add(333333*time.Microsecond), 1); res.Allowed || res.RetryAfter != time.Microsecond {
				t.Fatalf("333333µs after the last burst: %+v, want denied with RetryAfter 1µs", res)
			}
			if res := r.decide(last.Add(333334*time.Microsecond), 1); !res.Allowed {
				t.Fatalf("333334µs after the last burst: %+v, want admitted", res)
			}
		})
	}
}

// TestTokenBucketEqualsGCRA checks the documented equivalence: with the same
// rate and Capacity == Burst both admit exactly the same requests with the
// same results.
func TestTokenBucketEqualsGCRA(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 50 {
		capacity := 1 + rng.Int64N(20)
		rate := algorithms.Rate{Count: 1 + rng.Int64N(50), Period: time.Duration(1+rng.Int64N(5_000_000)) * time.Microsecond}
		tb := run{alg: algorithms.TokenBucket{Capacity: capacity, Refill: rate}}
		gc := run{alg: algorithms.GCRA{Rate: rate, Burst: capacity}}
		now := t0
		for step := range 500 {
			now = now.Add(time.Duration(rng.Int64N(int64(rate.Period)/rate.Count*2+1)) / time.Microsecond * time.Microsecond)
			cost := rng.Int64N(capacity + 1)
			a, b := decision(tb.decide(now, cost)), decision(gc.decide(now, cost))
			if a != b {
				t.Fatalf(
					"trial %d step %d (capacity %d, rate %v, cost %d): token bucket %+v, GCRA %+v",
					trial,
					step,
					capacity,
					rate,
					cost,
					a,
					b,
				)
			}
		}
	}
}

// TestSlidingLogMatchesDefinition compares every decision with a brute-force
// count of admitted cost in (now-window, now].
func TestSlidingLogMatchesDefinition(t *testing.T) {
	const limit, window = 7, 10 * time.Second
	r := run{alg: algorithms.SlidingLog{Limit: limit, Window: window}}
	rng := rand.New(rand.NewPCG(1, 1))
	var log []time.Time
	now := t0
	for step := range 5000 {
		now = now.Add(time.Duration(rng.Int64N(int64(3 * time.Second))).Truncate(time.Millisecond))
		cost := 1 + rng.Int64N(3)
		var inWindow int64
		for _, at := range log {
			if now.Sub(at) < window {
				inWindow++
			}
		}
		res := r.decide(now, cost)
		if want := inWindow+cost <= limit; res.Allowed != want {
			t.Fatalf("step %d: %d in window, cost %d: Allowed %v, want %v", step, inWindow, cost, res.Allowed, want)
		}
		if res.Allowed {
			for range cost {
				log = append(log, now)
			}
		}
	}
}

// TestSlidingWindowIsQuantizedLog checks the documented model: a sliding
// window counter admits exactly what a sliding log admits when each request's
// time is rounded down to its sub-window.
func TestSlidingWindowIsQuantizedLog(t *testing.T) {
	const limit, window, n = 9, 10 * time.Second, 5
	sw := run{alg: algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: n}}
	sl := run{alg: algorithms.SlidingLog{Limit: limit, Window: window}}
	rng := rand.New(rand.NewPCG(5, 6))
	now := t0
	for step := range 5000 {
		now = now.Add(time.Duration(rng.Int64N(int64(2 * time.Second))).Truncate(time.Microsecond))
		cost := 1 + rng.Int64N(3)
		a, b := sw.decide(now, cost), sl.decide(now.Truncate(window/n), cost)
		if a.Allowed != b.Allowed || a.Remaining != b.Remaining {
			t.Fatalf("step %d: sliding window %+v, quantized log %+v", step, a, b)
		}
	}
}

// TestSlidingWindowWorstCase shows the documented worst case: 2×Limit in a
// span shorter than Window, and the documented bound holding under random
// traffic.
func TestSlidingWindowWorstCase(t *testing.T) {
	const limit, window, n = 100, time.Minute, 6 // 10s sub-windows
	alg := algorithms.SlidingWindow{Limit: limit, Window: window, SubWindows: n}
	r := run{alg: alg}
	// Limit at the last microsecond of the sub-window [12:00:00, 12:00:10),
	first := t0.Add(10*time.Second - time.Microsecond)
	if res := r.decide(first, limit); !res.Allowed {
		t.Fatalf("first burst denied: %+v", res)
	}
	// and Limit again the moment that sub-window drops out, at 12:01:00.
	second := t0.Add(window)
	if res := r.decide(second, limit); !res.Allowed {
		t.Fatalf("second burst denied: %+v", res)
	}
	if span := second.Sub(first); span >= window {
		t.Fatalf("the two bursts are %v apart, not within one window", span)
	}
	// An exact sliding log admits only the first burst.
	log := run{alg: algorithms.SlidingLog{Limit: limit, Window: window}}
	log.decide(first, limit)
	if res := log.decide(second, limit); res.Allowed {
		t.Fatalf("the sliding log admitted the second burst: %+v", res)
	}
}

// TestLongIdle checks that a key idle for most of the supported time range
// neither overflows nor reports more than full capacity.
func TestLongIdle(t *testing.T) {
	later := time.UnixMicro(algo.EnvelopeMaxUnixMicro).Add(-time.Hour)
	for _, alg := range []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 5, Window: time.Second},
		algorithms.SlidingLog{Limit: 5, Window: time.Second},
		algorithms.SlidingWindow{Limit: 5, Window: time.Second, SubWindows: 10},
		algorithms.TokenBucket{Capacity: 5, Refill: algorithms.Rate{Count: math.MaxInt32, Period: time.Microsecond}},
		algorithms.GCRA{Rate: algorithms.Rate{Count: math.MaxInt32, Period: time.Microsecond}, Burst: 5},
	} {
		r := run{alg: alg}
		r.decide(t0, 5)
		if res := r.decide(later, 0); !res.Allowed || res.Remaining != 5 || res.ResetAfter != 0 {
			t.Fatalf("%s after 300 years: %+v; want full", alg.Kind().String(), res)
		}
		if res := r.decide(later, 5); !res.Allowed || res.Remaining != 0 {
			t.Fatalf("%s after 300 years, cost 5: %+v; want admitted", alg.Kind().String(), res)
		}
	}
}

// An admission says what it charged, a booking too; a denial and an
// inspection charged nothing. SetCharged marks a Result exactly as Decide does.
func TestCharged(t *testing.T) {
	for _, k := range algorithms.Kinds() {
		alg := mustNominal(t, k)
		st, admitted := algo.Decide(alg, nil, t0, 1)
		if got, cost := admitted.Charged(); got != alg || cost != 1 {
			t.Errorf("%v: an admission charged %v, %d; want itself, 1", alg, got, cost)
		}
		if markCharged(decision(admitted), alg, 1) != admitted {
			t.Errorf("%v: SetCharged does not mark a Result as Decide does", alg)
		}
		_, denied := algo.Decide(alg, st, t0, 1)
		_, peeked := algo.Decide(alg, nil, t0, 0)
		for _, r := range []algorithms.Result{denied, peeked, markCharged(denied, alg, 1), markCharged(peeked, alg, 0)} {
			if got, cost := r.Charged(); got != nil || cost != 0 {
				t.Errorf("%v: %+v charged %v, %d; want nothing", alg, r, got, cost)
			}
		}
		if algo.Reserves(alg) {
			_, booked, _ := algo.Reserve(alg, st, t0, 1, time.Hour)
			if got, cost := booked.Charged(); !booked.Allowed || got != alg || cost != 1 {
				t.Errorf("%v: a booking %+v charged %v, %d", alg, booked, got, cost)
			}
		}
	}
}

// markCharged returns r marked by SetCharged.
func markCharged(r algorithms.Result, alg algorithms.Algorithm, cost int64) algorithms.Result {
	r.SetCharged(alg, cost)
	return r
}
