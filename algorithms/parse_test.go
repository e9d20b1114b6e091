package algorithms_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// TestParseRate reads every form ParseRate's doc names,
// and gives each invalid form the sentinel the docs promise.
func TestParseRate(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in   string
		want algorithms.Rate
	}{
		{"100/min", algorithms.PerMinute(100)},
		{"10/s", algorithms.PerSecond(10)},
		{"5000/h", algorithms.PerHour(5000)},
		{"1000000/day", algorithms.Rate{Count: 1_000_000, Period: day}},
		{"7/1500ms", algorithms.Rate{Count: 7, Period: 1500 * time.Millisecond}},
		{"100/5m", algorithms.Rate{Count: 100, Period: 5 * time.Minute}},
		{" 3 / 2 days", algorithms.Rate{Count: 3, Period: 2 * day}},
		{"10/1m0s", algorithms.PerMinute(10)}, // time.Duration's own form
		{"10/1h30m", algorithms.Rate{Count: 10, Period: 90 * time.Minute}},
		// Every unit word, and the plural of each that has one.
		{"3/s", algorithms.PerSecond(3)},
		{"3/sec", algorithms.PerSecond(3)},
		{"3/secs", algorithms.PerSecond(3)},
		{"3/second", algorithms.PerSecond(3)},
		{"3/seconds", algorithms.PerSecond(3)},
		{"5/m", algorithms.PerMinute(5)},
		{"5/min", algorithms.PerMinute(5)},
		{"5/mins", algorithms.PerMinute(5)},
		{"5/minute", algorithms.PerMinute(5)},
		{"5/minutes", algorithms.PerMinute(5)},
		{"1000/h", algorithms.PerHour(1000)},
		{"1000/hr", algorithms.PerHour(1000)},
		{"1000/hrs", algorithms.PerHour(1000)},
		{"1000/hour", algorithms.PerHour(1000)},
		{"1000/hours", algorithms.PerHour(1000)},
		{"9/d", algorithms.Rate{Count: 9, Period: day}},
		{"9/day", algorithms.Rate{Count: 9, Period: day}},
		{"9/days", algorithms.Rate{Count: 9, Period: day}},
		// A whole number before a unit word, with or without a space.
		{"9/2secs", algorithms.Rate{Count: 9, Period: 2 * time.Second}},
		{"9/15 mins", algorithms.Rate{Count: 9, Period: 15 * time.Minute}},
		{"9/3hrs", algorithms.Rate{Count: 9, Period: 3 * time.Hour}},
	} {
		got, err := algorithms.ParseRate(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want error
	}{
		// Not a count per period.
		{"100", algorithms.ErrInvalidAlgorithm},
		{"fast/min", algorithms.ErrInvalidAlgorithm},
		{"1.5/s", algorithms.ErrInvalidAlgorithm},
		{"3/fortnight", algorithms.ErrInvalidAlgorithm},
		{"3/", algorithms.ErrInvalidAlgorithm},
		{"3/5", algorithms.ErrInvalidAlgorithm},
		{"3/ss", algorithms.ErrInvalidAlgorithm},
		// A count out of range.
		{"0/min", algorithms.ErrInvalidAlgorithm},
		{"-3/min", algorithms.ErrInvalidAlgorithm},
		{"-99999999999999999999/min", algorithms.ErrInvalidAlgorithm}, // below, not above
		{"1125899906842625/s", algorithms.ErrInvalidAlgorithm},        // 2^50 + 1
		{"99999999999999999999/s", algorithms.ErrInvalidAlgorithm},
		// A period out of range.
		{"10/0s", algorithms.ErrInvalidAlgorithm},
		{"10/0d", algorithms.ErrInvalidAlgorithm},
		{"10/0 mins", algorithms.ErrInvalidAlgorithm},
		{"10/0ms", algorithms.ErrInvalidAlgorithm},
		{"3/-1s", algorithms.ErrInvalidAlgorithm},
		{"10/1ns", algorithms.ErrInvalidAlgorithm},
		{"10/1500ns", algorithms.ErrInvalidAlgorithm},
		{"10/999999h", algorithms.ErrInvalidAlgorithm},
		{"10/99999999999999999days", algorithms.ErrInvalidAlgorithm},
		{"10/99999999999999999999h", algorithms.ErrInvalidAlgorithm},
		{"10/-99999999999999999999h", algorithms.ErrInvalidAlgorithm}, // below, not above
	} {
		if got, err := algorithms.ParseRate(tc.in); !errors.Is(err, tc.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want an error matching %v", tc.in, got, err, tc.want)
		}
	}
}

// TestParsePeriod: the period of a rate of 1, in every form ParseRate's doc
// names, and periods it rejects.
func TestParsePeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"min": time.Minute, "2 days": 48 * time.Hour, "90s": 90 * time.Second,
		"1500ms": 1500 * time.Millisecond, "3hrs": 3 * time.Hour,
	} {
		if got, err := algorithms.ParseRate("1/" + in); err != nil || got.Period != want {
			t.Errorf("ParseRate(%q) = %v, %v; want a period of %v", "1/"+in, got, err, want)
		}
	}
	for in, want := range map[string]error{
		"":          algorithms.ErrInvalidAlgorithm,
		"fortnight": algorithms.ErrInvalidAlgorithm,
		"5":         algorithms.ErrInvalidAlgorithm,
		"0s":        algorithms.ErrInvalidAlgorithm,
		"0day":      algorithms.ErrInvalidAlgorithm,
		"-2m":       algorithms.ErrInvalidAlgorithm,
		"9999999h":  algorithms.ErrInvalidAlgorithm,
		"-9999999h": algorithms.ErrInvalidAlgorithm,
	} {
		if got, err := algorithms.ParseRate("1/" + in); !errors.Is(err, want) {
			t.Errorf("ParseRate(%q) = %v, %v; want an error matching %v", "1/"+in, got, err, want)
		}
	}
}

// Rate.String and ParseRate round-trip for every valid rate.
func TestRateStringRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		r := algorithms.Rate{
			Count:  1 + rng.Int64N(1<<50),
			Period: time.Duration(1+rng.Int64N(1<<50)) * time.Microsecond,
		}
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
