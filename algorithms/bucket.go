package algorithms

import (
	"fmt"
	"math/bits"
)

// checkBucket checks a burst or capacity against a valid rate whose period
// is p µs: the count at most 2^50, and a full bucket refilled within 2^50µs,
// burst × period / count, compared without forming the product.
func checkBucket(burst int64, what string, rate Rate, p int64) error {
	if err := checkCount(what, burst); err != nil {
		return err
	}
	hi, lo := bits.Mul64(uint64(burst), uint64(p))
	limHi, limLo := bits.Mul64(uint64(maxDuration), uint64(rate.Count))
	if hi > limHi || hi == limHi && lo > limLo {
		return fmt.Errorf(
			"%w: %s %d at %v refills in %d × %v / %d, above 2^50µs",
			ErrInvalidAlgorithm,
			what,
			burst,
			rate,
			burst,
			rate.Period,
			rate.Count,
		)
	}
	return nil
}
