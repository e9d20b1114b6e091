package algorithms_test

import (
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// TestChargedRoundTrip: Charged gives back the algorithm SetCharged was
// given, its calendar period and zone included, which a Result keeps
// packed.
func TestChargedRoundTrip(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, alg := range []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(10), Burst: 20},
		algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 6},
		algorithms.CalendarWindow{Limit: 5, Period: "month", Location: berlin},
		algorithms.CalendarWindow{Limit: 7, Period: "week"},
		algorithms.CalendarWindow{Limit: 9, Period: "day", Location: time.FixedZone("UTC+3", 3*3600)},
	} {
		res := algorithms.Result{Allowed: true}
		res.SetCharged(alg, 3)
		got, cost := res.Charged()
		if cost != 3 || got == nil || got.String() != alg.String() {
			t.Errorf("Charged after SetCharged(%v, 3) = %v, %d", alg, got, cost)
		}
		if c, ok := got.(algorithms.CalendarWindow); ok {
			want := alg.(algorithms.CalendarWindow)
			same := (c.Location == nil) == (want.Location == nil) &&
				(c.Location == nil || c.Location.String() == want.Location.String())
			if !same {
				t.Errorf("Charged after SetCharged(%v, 3): zone %v", alg, c.Location)
			}
		}
	}
}
