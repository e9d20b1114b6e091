package lease

import (
	"slices"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// TestExcesses: the bound every span of a fleet's admissions is checked
// against, on hand-worked cases. A bucket of burst 2 refilling one token
// per 10 µs holds 2 admissions at an instant and 3 over [0, 10] µs; a
// fixed window of 2 per 10 µs holds 2 per window.
func TestExcesses(t *testing.T) {
	bucket := algorithms.GCRA{Rate: algorithms.Rate{Count: 1, Period: 10 * time.Microsecond}, Burst: 2}
	window := algorithms.FixedWindow{Limit: 2, Window: 10 * time.Microsecond}
	for _, c := range []struct {
		alg  algorithms.Algorithm
		ats  []int64
		want []int
	}{
		{bucket, []int64{0, 0}, nil},
		{bucket, []int64{0, 0, 0}, []int{2}},
		{bucket, []int64{0, 0, 9}, []int{2}},
		{bucket, []int64{0, 0, 10}, nil},
		{bucket, []int64{0, 0, 10, 10}, []int{3}},
		{bucket, []int64{0, 0, 10, 20, 30}, nil},
		{bucket, []int64{0, 0, 0, 0, 10}, []int{2, 3}},
		{window, []int64{0, 9}, nil},
		{window, []int64{0, 5, 9}, []int{2}},
		{window, []int64{0, 9, 10, 19}, nil},
		{window, []int64{9, 10, 11, 12}, []int{3}},
	} {
		var got []int
		for _, e := range Excesses(c.alg, c.ats) {
			got = append(got, e.Index)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %v: excesses at %v, want %v", c.alg.Kind().String(), c.ats, got, c.want)
		}
	}
}
