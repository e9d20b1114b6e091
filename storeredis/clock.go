package storeredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

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
	r := &clockReading{}
	r.effect = reads
	start := time.Now()
	if err := s.do(ctx, r); err != nil {
		return 0, 0, err
	}
	rtt := time.Since(start) // monotonic
	mid := start.Add(rtt / 2)
	return r.server.Sub(mid), rtt / 2, nil
}

// clockReading is the op that reads Redis's clock (time.lua).
type clockReading struct {
	request
	server time.Time
}

func (r *clockReading) script() (*redis.Script, error) { return scripts.Time, nil }
func (r *clockReading) keys() []string                 { return nil }
func (r *clockReading) args() []any                    { return nil }

// parse reads time.lua's reply: seconds and microseconds.
func (r *clockReading) parse(reply any) error {
	fields, ok := reply.([]any)
	if !ok || len(fields) != 2 {
		return fmt.Errorf("TIME replied %v", reply)
	}
	var v [2]int64
	for i, f := range fields {
		n, ok := f.(int64)
		if !ok {
			return fmt.Errorf("TIME replied %v", reply)
		}
		v[i] = n
	}
	r.server = time.Unix(v[0], v[1]*1000)
	return nil
}
