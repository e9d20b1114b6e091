package redistest

import (
	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/roundtrips"
)

// RoundTrips counts the round trips a go-redis client makes (see
// roundtrips.Counter).
type RoundTrips = roundtrips.Counter

// CountRoundTrips adds a counting hook to c.
func CountRoundTrips(c interface{ AddHook(redis.Hook) }) *RoundTrips { return roundtrips.Count(c) }
