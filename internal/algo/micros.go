package algo

import (
	"math/bits"
	"time"
)

// Microsecond arithmetic shared by the algorithms. Times are microseconds
// since the Unix epoch; durations are microseconds.

func micros(t time.Time) int64 { return t.UnixMicro() }

func duration(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// need is the cost a decision of the given cost is judged by: the cost
// itself, 1 for an inspection of cost 0, and n for an inspection of a cost
// of n, which is given as -n (see Decide).
func need(cost int64) int64 {
	if cost > 0 {
		return cost
	}
	return max(-cost, 1)
}

// floorMod is a mod b rounded towards negative infinity, always in [0, b);
// b > 0.
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// mulDiv returns a×b/c rounded down and a×b mod c, computed exactly for
// 0 <= a, b < 2^63 and 0 < c < 2^63 whose quotient fits in 63 bits. The
// product may exceed 64 bits: it is formed in 128. The Lua scripts'
// mul_div computes the same two integers.
func mulDiv(a, b, c int64) (q, r int64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi == 0 {
		// The common case, and a 64-bit division is cheaper than Div64.
		return int64(lo / uint64(c)), int64(lo % uint64(c))
	}
	uq, ur := bits.Div64(hi, lo, uint64(c))
	return int64(uq), int64(ur)
}

// gcd is the greatest common divisor of a, b > 0.
func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
