package lease

import (
	"fmt"
	"math"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// Policy is how a Sizer picks the size of a lease.
type Policy struct {
	// RoundTrip is the time a store round trip takes.
	RoundTrip time.Duration

	// Lifetime is how many round trips a lease should last at the
	// instance's own rate on the key: a lease holds what the instance
	// spends in Lifetime × RoundTrip.
	Lifetime int64

	// Divisor caps a lease at Burst / Divisor units (the capacity or the
	// limit for the token bucket and fixed window), so that no instance
	// holds more than that share of the key's burst.
	Divisor int64

	// Min is the fewest units worth a lease; a smaller size is 0: decide
	// directly.
	Min int64
}

// ErrInvalidPolicy is returned by NewSizer for a Policy out of range.
var ErrInvalidPolicy = fmt.Errorf("%w: policy", ErrInvalid)

// Sizer estimates an instance's spend rate on one key and sizes its
// leases. It is not safe for concurrent use.
type Sizer struct {
	policy Policy
	span   int64   // the rate's measuring interval, µs: Lifetime round trips
	rate   float64 // requests per µs, smoothed
	count  int64   // requests in the current interval
	since  int64   // the current interval's start, µs
	begun  bool
}

// NewSizer returns a Sizer for p.
func NewSizer(p Policy) (*Sizer, error) {
	if p.RoundTrip < time.Microsecond || p.Lifetime < 1 || p.Divisor < 1 || p.Min < 1 {
		return nil, fmt.Errorf("%w: %+v", ErrInvalidPolicy, p)
	}
	return &Sizer{policy: p, span: p.RoundTrip.Microseconds() * p.Lifetime}, nil
}

// Observe records a request of cost at now on the key, whatever became of
// it.
func (s *Sizer) Observe(now time.Time, cost int64) {
	t := now.UnixMicro()
	s.roll(t)
	s.count += max(cost, 0)
}

// roll closes every measuring interval that has ended by t.
func (s *Sizer) roll(t int64) {
	if !s.begun {
		s.begun, s.since = true, t
		return
	}
	for t-s.since >= s.span {
		s.rate = s.rate/2 + float64(s.count)/float64(s.span)/2
		s.count = 0
		s.since += s.span
		if s.rate == 0 && t-s.since >= s.span {
			s.since = t - floorMod(t-s.since, s.span)
		}
	}
}

// Rate returns the estimated local rate at now, in requests per second.
func (s *Sizer) Rate(now time.Time) float64 {
	s.roll(now.UnixMicro())
	return s.perMicro() * 1e6
}

// perMicro is the smoothed rate, or the current interval's when it is
// higher (a rising rate shows before its interval closes).
func (s *Sizer) perMicro() float64 {
	r := s.rate
	if s.begun && s.count > 0 {
		r = max(r, float64(s.count)/float64(s.span))
	}
	return r
}

// Size returns how many units to lease under alg at now, and the longest
// wait for the booking's turn to ask the store for (Reserve's maxWait;
// unused for the fixed window); 0 units means decide directly. ahead is
// how far the key's TAT was ahead of now at the latest reply the instance
// saw (its ResetAfter less the time since), which other instances'
// bookings can only have made longer, and shift the lease's Config.Shift.
//
// The size is the instance's spend over Lifetime round trips, capped at
// Burst / Divisor, and, for the bucket, at what it can spend before the
// units' deadlines: unit j of a lease booked at now, TAT ahead by u, has
// its deadline about u + (j-1)T - shift from now, and the instance spends
// it about j/r from now, so j(1/r - T) <= u - T - shift must hold for the
// last unit. For the fixed window the units must be spent before the
// window ends.
func (s *Sizer) Size(
	alg algorithms.Algorithm,
	now time.Time,
	ahead, shift time.Duration,
) (n int64, maxWait time.Duration) {
	if algo.CheckKind(alg) != nil {
		return 0, 0
	}
	t := now.UnixMicro()
	s.roll(t)
	r := s.perMicro()
	if r <= 0 {
		return 0, 0
	}
	p := algo.ParamsOf(alg)
	burst := algo.MaxCost(alg)
	size := math.Ceil(r * float64(s.span))
	size = min(size, float64(burst/s.policy.Divisor))
	switch algo.FamilyOf(alg.Kind()) {
	case algo.FamilyBucket:
		T := float64(p.Window.Microseconds()) / float64(p.Limit)
		room := float64(ahead.Microseconds()) - T - float64(shift.Microseconds())
		if room < 1/r {
			return 0, 0
		}
		if gap := 1/r - T; gap > 0 {
			size = min(size, math.Floor(room/gap))
		}
		maxWait = time.Duration(s.span) * time.Microsecond
	case algo.FamilyFixedWindow:
		w := p.Window.Microseconds()
		left := w - floorMod(t, w)
		size = min(size, math.Floor(r*float64(left)))
	default:
		return 0, 0
	}
	if size < float64(s.policy.Min) {
		return 0, 0
	}
	return int64(size), maxWait
}
