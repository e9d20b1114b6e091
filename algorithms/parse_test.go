package algorithms_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

func TestParseRate(t *testing.T) {
	for in, want := range map[string]algorithms.Rate{
		"100/min":     algorithms.PerMinute(100),
		"10/s":        algorithms.PerSecond(10),
		"5000/h":      algorithms.PerHour(5000),
		"1000000/day": {Count: 1_000_000, Period: 24 * time.Hour},
		"7/1500ms":    {Count: 7, Period: 1500 * time.Millisecond},
		"100/5m":      {Count: 100, Period: 5 * time.Minute},
		" 3 / 2 days": {Count: 3, Period: 48 * time.Hour},
		"10/1m0s":     algorithms.PerMinute(10), // time.Duration's own form
	} {
		got, err := algorithms.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]error{
		"100":                    algorithms.ErrInvalidRate,
		"fast/min":               algorithms.ErrInvalidRate,
		"1.5/s":                  algorithms.ErrInvalidRate,
		"3/fortnight":            algorithms.ErrInvalidRate,
		"3/0s":                   algorithms.ErrInvalidRate,
		"3/-1s":                  algorithms.ErrInvalidRate,
		"0/min":                  algorithms.ErrInvalidLimit,
		"10/1ns":                 algorithms.ErrInvalidPeriod,
		"10/999999h":             algorithms.ErrOutOfRange,
		"99999999999999999999/s": algorithms.ErrInvalidRate,
	} {
		if got, err := algorithms.ParseRate(in); !errors.Is(err, want) {
			t.Errorf("ParseRate(%q) = %v, %v; want an error matching %v", in, got, err, want)
		}
	}
}

// Rate.String and ParseRate round-trip for every valid rate.
func TestRateStringRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		r := algorithms.Rate{Count: 1 + rng.Int64N(1<<50), Period: time.Duration(1+rng.Int64N(1<<50)) * time.Microsecond}
		switch rng.IntN(3) {
		case 0:
			r.Period = r.Period.Truncate(time.Second) + time.Second
		case 1:
			r.Period = time.Duration(1+rng.IntN(1000)) * time.Minute
		}
		got, err := algorithms.ParseRate(r.String())
		if err != nil || got != r {
			t.Fatalf("ParseRate(%q) = %v, %v; want %v", r.String(), got, err, r)
		}
	}
}
