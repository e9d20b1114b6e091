package denycache

import (
	"fmt"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

var (
	gcra   algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2}
	raised algorithms.Algorithm = algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 3}
)

// denied is a denial of cost 1 decided at at (µs) that admits again
// retry µs later and is full again reset µs later.
func denied(at, retry, reset int64) algorithms.Result {
	return algorithms.Result{
		Limit:      2,
		RetryAfter: time.Duration(retry) * time.Microsecond,
		ResetAfter: time.Duration(reset) * time.Microsecond,
		At:         time.UnixMicro(at),
	}
}

// TestDeny remembers a denial sent at 1,000 on the server's clock (the
// backend decided at 5,000 on its own) and asks at times around it: it
// answers from 1,000 until 1,000 + RetryAfter, counting RetryAfter and
// ResetAfter down and At forward on the backend's timeline, and only for
// the same parameters.
func TestDeny(t *testing.T) {
	c := New(64, false)
	key := "k"
	c.Remember(key, gcra, denied(5_000, 300, 800), 1, 1_000, c.Generation(key))
	for _, tt := range []struct {
		name string
		alg  algorithms.Algorithm
		t    int64
		want algorithms.Result
		ok   bool
	}{
		{"when sent", gcra, 1_000, denied(5_000, 300, 800), true},
		{"later", gcra, 1_100, denied(5_100, 200, 700), true},
		{"a µs before RetryAfter", gcra, 1_299, denied(5_299, 1, 501), true},
		{"at RetryAfter", gcra, 1_300, algorithms.Result{}, false},
		{"before it was sent", gcra, 999, algorithms.Result{}, false},
		{"other parameters", raised, 1_100, algorithms.Result{}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Deny([]byte(key), tt.alg, tt.t)
			if ok != tt.ok || got != tt.want {
				t.Fatalf("Deny at %d: %+v, %v; want %+v, %v", tt.t, got, ok, tt.want, tt.ok)
			}
		})
	}
	if _, ok := c.Deny([]byte("other"), gcra, 1_100); ok {
		t.Fatal("another key was denied")
	}
}

// TestDenyInClientTime: with the caller's clock, a denial answers only
// from the time the backend decided at, which may be later than the
// request's now (a now behind the key's latest time).
func TestDenyInClientTime(t *testing.T) {
	c := New(64, true)
	c.Remember("k", gcra, denied(1_500, 800, 900), 1, 1_000, c.Generation("k"))
	if _, ok := c.Deny([]byte("k"), gcra, 1_499); ok {
		t.Fatal("a now before the decision's time was denied")
	}
	if got, ok := c.Deny([]byte("k"), gcra, 1_500); !ok || got != denied(1_500, 300, 400) {
		t.Fatalf("at the decision's time: %+v, %v; want a denial at 1,500 for 300µs", got, ok)
	}
}

// TestRememberOnlyDenialsOfCostOne: an admission, or a denial of a
// larger cost, drops what was remembered; neither is remembered.
func TestRememberOnlyDenialsOfCostOne(t *testing.T) {
	for _, tt := range []struct {
		name string
		res  algorithms.Result
		cost int64
	}{
		{"an admission", algorithms.Result{Allowed: true, Limit: 2, Remaining: 1, At: time.UnixMicro(1_000)}, 1},
		{"a denial of cost 2", denied(1_000, 300, 800), 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := New(64, false)
			c.Remember("k", gcra, denied(1_000, 300, 800), 1, 1_000, c.Generation("k"))
			c.Remember("k", gcra, tt.res, tt.cost, 1_100, c.Generation("k"))
			if _, ok := c.Deny([]byte("k"), gcra, 1_100); ok || c.Len() != 0 {
				t.Fatalf("after %s, the cache still denies (%d remembered)", tt.name, c.Len())
			}
		})
	}
}

// TestForget drops a key's denial, and a denial decided before a Forget
// (its Generation read before) is not kept when it comes back after it.
func TestForget(t *testing.T) {
	c := New(64, false)
	c.Remember("k", gcra, denied(1_000, 300, 800), 1, 1_000, c.Generation("k"))
	gen := c.Generation("k") // a request is sent...
	c.Forget("k")            // ...the key is reset meanwhile...
	if _, ok := c.Deny([]byte("k"), gcra, 1_100); ok {
		t.Fatal("a forgotten denial still denies")
	}
	c.Remember("k", gcra, denied(1_000, 300, 800), 1, 1_000, gen) // ...and its denial comes back
	if _, ok := c.Deny([]byte("k"), gcra, 1_100); ok || c.Len() != 0 {
		t.Fatal("a denial decided before the reset was kept")
	}
}

// TestBounded remembers 20 times as many denials as the cache holds: it
// keeps at most its size.
func TestBounded(t *testing.T) {
	c := New(64, false)
	for i := range 64 * 20 {
		key := fmt.Sprint("k", i)
		c.Remember(key, gcra, denied(1_000, 300, 800), 1, 1_000, c.Generation(key))
	}
	if n := c.Len(); n == 0 || n > 64 {
		t.Fatalf("the cache holds %d denials, want 1 to 64", n)
	}
}

// TestDenyAllocatesNothing: a hit, on a key in a caller's buffer,
// allocates nothing.
func TestDenyAllocatesNothing(t *testing.T) {
	c := New(64, false)
	c.Remember(
		"ratewise:gcra:1s:{alice}",
		gcra,
		denied(1_000, 300, 800),
		1,
		1_000,
		c.Generation("ratewise:gcra:1s:{alice}"),
	)
	var buf [64]byte
	key := append(buf[:0], "ratewise:gcra:1s:{alice}"...)
	var ok bool
	if allocs := testing.AllocsPerRun(100, func() { _, ok = c.Deny(key, gcra, 1_100) }); allocs != 0 || !ok {
		t.Fatalf("a hit: %v, allocating %.1f times; want a denial and none", ok, allocs)
	}
}
