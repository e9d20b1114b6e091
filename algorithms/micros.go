package algorithms

import "time"

// Microsecond arithmetic shared by the algorithms. Times are microseconds
// since the Unix epoch; durations are microseconds.

func micros(t time.Time) int64 { return t.UnixMicro() }

func duration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// floorDiv is a/b rounded towards negative infinity; b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// ceilDiv is a/b rounded towards positive infinity; b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a > 0 {
		q++
	}
	return q
}

// floorMod is a - b*floorDiv(a, b), always in [0, b); b > 0.
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
