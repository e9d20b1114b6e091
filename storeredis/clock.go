package storeredis

import (
	"context"
	"fmt"
	"time"

	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// ClockOffset measures how far Redis's clock is ahead of this process's:
// Redis's TIME, read inside a script, minus the local time halfway through
// the round trip. A negative offset means Redis is behind. The reading is
// accurate to within uncertainty, half the round trip.
//
// By default scripts decide on Redis's clock (see WithClientTime), so an
// offset does not move any decision; it tells how far apart the timelines
// of this process and its limits are, which matters where the app compares
// a Result's At with its own clock, and before switching to client time.
// On Redis Cluster the node asked is any master.
func (s *Store) ClockOffset(ctx context.Context) (offset, uncertainty time.Duration, err error) {
	start := time.Now()
	reply, err := scripts.Time.Run(ctx, s.client, nil).Result()
	if err != nil {
		return 0, 0, s.failure(ctx, err)
	}
	rtt := time.Since(start) // monotonic
	fields, ok := reply.([]any)
	if !ok || len(fields) != 2 {
		return 0, 0, fmt.Errorf("%w: %w: TIME replied %v", store.ErrUnavailable, ErrMalformedReply, reply)
	}
	var v [2]int64
	for i, f := range fields {
		n, ok := f.(int64)
		if !ok {
			return 0, 0, fmt.Errorf("%w: %w: TIME replied %v", store.ErrUnavailable, ErrMalformedReply, reply)
		}
		v[i] = n
	}
	server := time.Unix(v[0], v[1]*1000)
	mid := start.Add(rtt / 2)
	return server.Sub(mid), rtt / 2, nil
}
