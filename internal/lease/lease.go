// Package lease is the pure core of leases on a hot key: an instance books
// n units of a token bucket's, GCRA's or fixed window's quota from the
// store in one round trip, spends them locally one at a time, and gives
// back the ones it did not spend when the lease ends.
//
// A lease never lets more through than the store would. For the token
// bucket and GCRA (one bucket step in package algorithms), a unit booked
// with theoretical arrival time X (the key's TAT just after the unit was
// booked) may be spent at a time s only in [X - Burst×T, X - T], T the
// emission interval: the same window a direct admission's decision time
// lies in. Units of a fleet booked in order have X's at least T apart, so
// any span [a, b] then holds at most Burst + (b-a)/T spent units, the
// bucket's own bound. A unit still unspent at X - T has expired: spent
// later, it could join a full burst that other instances take directly.
// For the fixed window, a unit booked in window w may be spent in w, until
// it ends.
//
// The core keeps no clock and starts no goroutine: every call takes now.
// It is not safe for concurrent use; the caller serialises each lease.
//
// Package lease at the module's root (lease.Wrap) is the layer that uses
// it over any store that books leases and refunds; design.md, beside this file,
// gives the math and what is still open, and docs/leases.md what the layer
// costs.
package lease

import (
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// ErrUnsupported is returned for an algorithm that cannot be leased: any
// but the token bucket, GCRA and the fixed window.
var ErrUnsupported = errors.New("lease: algorithm cannot be leased")

// ErrNotAdmitted is returned by New for a reply that admitted nothing.
var ErrNotAdmitted = errors.New("lease: the booking was not admitted")

// ErrInvalid is returned by New for a unit count or reserve out of range.
var ErrInvalid = errors.New("lease: invalid lease")

// Lease is n units booked by one reply of the store, spent in the order
// they were booked.
type Lease struct {
	alg    algorithms.Algorithm
	bucket bool
	n      int64     // units booked
	burst  int64     // the burst, capacity or limit
	at     time.Time // the booking's Result.At: what a refund is given
	// Bucket: the rate is k per p µs in lowest terms, T = p/k µs. c is the
	// booking's TAT rounded up to the µs (the reply's now + ResetAfter);
	// exact when T is a whole number of µs, which keeps every TAT whole.
	k, p  int64
	c     int64
	exact bool
	// shift is how far, in µs, refunds of other leases may move this
	// lease's units' X back (see Config.Shift).
	shift int64
	// slip moves every deadline later: 0, but for a test that breaks the
	// deadline rule on purpose.
	slip int64
	// Fixed window: the lease's time, its window's start and end
	// (exclusive), and the Remaining the booking left.
	start, open, end, remaining int64

	next  int64 // the next unit to spend, 0-based
	spent int64
	last  int64 // units up to and including the last one spent
	ended bool
}

// Config is what a lease needs beside the reply.
type Config struct {
	// Shift bounds how far refunds of other leases, given back after this
	// lease was booked, may move the theoretical arrival times of its
	// units back (see ShiftFor); every deadline is that much earlier. 0
	// when no lease on the key is ever given back through
	// store.Store.Refund, or when the store gives back only a lease nothing
	// was booked after. Ignored for the fixed window.
	Shift time.Duration
}

// New returns the lease that a booking of n units under alg made at now
// returned: store.Store.Lease.Lease's Result, which for the token bucket and
// GCRA is a booking's (the wait it returns is not needed: every unit's
// turn follows from the Result) and for the fixed window a decision's of
// cost n. now must be the now
// the store was given, res.Allowed must be true, and n the cost booked.
func New(alg algorithms.Algorithm, now time.Time, n int64, res algorithms.Result, cfg Config) (*Lease, error) {
	if err := algo.CheckKind(alg); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupported, err)
	}
	if !res.Allowed {
		return nil, ErrNotAdmitted
	}
	p := algo.ParamsOf(alg)
	limit := algo.MaxCost(alg)
	if n < 1 || n > limit {
		return nil, fmt.Errorf("%w: %d units of %d", ErrInvalid, n, limit)
	}
	if cfg.Shift < 0 {
		return nil, fmt.Errorf("%w: a shift of %v", ErrInvalid, cfg.Shift)
	}
	l := &Lease{alg: alg, n: n, burst: limit, at: res.At}
	t := now.UnixMicro()
	switch algo.FamilyOf(alg.Kind()) {
	case algo.FamilyBucket:
		period := p.Window.Microseconds()
		g := gcd(p.Limit, period)
		l.bucket, l.k, l.p = true, p.Limit/g, period/g
		l.exact = l.k == 1
		l.c = t + res.ResetAfter.Microseconds()
		l.shift = cfg.Shift.Microseconds()
	case algo.FamilyFixedWindow:
		w := p.Window.Microseconds()
		start := max(res.At.UnixMicro(), t)
		open := start - floorMod(start, w)
		l.start, l.open, l.end, l.remaining = start, open, open+w, res.Remaining
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupported, alg.Kind().String())
	}
	return l, nil
}

// span returns m×T as whole µs and a fraction f/k of one.
func (l *Lease) span(m int64) (us, f int64) { return mulDiv(max(m, 0), l.p, l.k) }

// Window returns the first and last microsecond in which unit i (0-based,
// in booking order) may be spent, the last before any reserve. For the
// bucket, with X_i = X_n - (n-1-i)×T known as c, the booking's TAT rounded
// up: the earliest is ceil(X_i - Burst×T) and the deadline floor(X_i - T),
// each computed from c so that it errs inwards when c is not exact.
func (l *Lease) Window(i int64) (earliest, deadline time.Time) {
	e, d := l.window(i)
	return time.UnixMicro(e), time.UnixMicro(d)
}

func (l *Lease) window(i int64) (earliest, deadline int64) {
	if !l.bucket {
		// From the window's start: a request whose clock reading lags
		// the booking's is decided at the booking's time, in the same
		// window, as the store decides a request whose now is behind
		// the key's latest.
		return l.open, l.end - 1 + l.slip
	}
	// X_i <= c - (n-1-i)T, so X_i - B×T <= c - (n-1-i+B)T, whose ceiling
	// is c less the whole µs of the span.
	us, _ := l.span(l.n - 1 - i + l.burst)
	earliest = l.c - us
	// X_i > c - 1 - (n-1-i)T when c is rounded, so X_i - T is above
	// c - 1 - (n-i)T, whose floor is c - 1 - ceil((n-i)T).
	us, f := l.span(l.n - i)
	deadline = l.c - us
	if f > 0 {
		deadline--
	}
	if !l.exact {
		deadline--
	}
	return earliest, deadline - l.shift + l.slip
}

// Spend decides one unit of cost 1 at now. ok reports whether the lease
// decided: then the Result is an admission, charged to the lease's
// algorithm at cost 1, or, while the next unit's turn has not come, a
// denial whose RetryAfter is the wait until it (the store would deny too:
// the key's TAT is beyond that unit's). When ok is false the lease has no
// unit left to spend at or after now, and the request goes to the store.
// Units whose deadline has passed are skipped.
func (l *Lease) Spend(now time.Time) (algorithms.Result, bool) {
	if l.ended {
		return algorithms.Result{}, false
	}
	s := now.UnixMicro()
	for l.next < l.n {
		earliest, deadline := l.window(l.next)
		if s > deadline {
			l.next++
			continue
		}
		if s < earliest {
			// The key's TAT is at least c, so it is full again no sooner.
			return algorithms.Result{
				Limit:      l.burst,
				RetryAfter: time.Duration(earliest-s) * time.Microsecond,
				ResetAfter: time.Duration(max(l.c-s, 0)) * time.Microsecond,
				At:         now,
			}, true
		}
		res := l.result(l.next, s)
		l.next++
		l.spent++
		l.last = l.next
		res.SetCharged(l.alg, 1)
		return res, true
	}
	return algorithms.Result{}, false
}

// result is what the store would have replied to a direct decision of
// unit i at s on the key as the booking left it, had the booking ended
// with unit i: Allowed, At s, Remaining and ResetAfter from X_i (its upper
// bound c - (n-1-i)T when c is rounded, which may make Remaining one
// lower and ResetAfter a microsecond longer).
func (l *Lease) result(i, s int64) algorithms.Result {
	res := algorithms.Result{Allowed: true, Limit: l.burst, At: time.UnixMicro(s)}
	if !l.bucket {
		res.At = time.UnixMicro(max(s, l.start))
		// As if only the units spent so far had been charged.
		res.Remaining = min(l.burst, l.remaining+l.n-i-1)
		res.ResetAfter = time.Duration(l.end-s) * time.Microsecond
		return res
	}
	us, _ := l.span(l.n - 1 - i)
	delta := max(l.c-s, 0) // X_n - s, rounded up
	res.ResetAfter = time.Duration(max(delta-us, 0)) * time.Microsecond
	// Remaining = floor((B×T - (X_i - s)) / T) = (B+n-1-i) - ceil(delta×k/p).
	q, r := mulDiv(delta, l.k, l.p)
	if r > 0 {
		q++
	}
	res.Remaining = min(max(l.burst+l.n-1-i-q, 0), l.burst)
	return res
}

// Held returns the units that may still be spent at now or later.
func (l *Lease) Held(now time.Time) int64 {
	if l.ended {
		return 0
	}
	s := now.UnixMicro()
	var h int64
	for i := l.n - 1; i >= l.next; i-- {
		if _, d := l.window(i); d < s {
			break // deadlines rise with i
		}
		h++
	}
	return h
}

// Done reports whether no unit can be spent at now or later.
func (l *Lease) Done(now time.Time) bool { return l.Held(now) == 0 }

// End ends the lease at now and returns what to give back through
// store.Store.Refund.Refund, with the booking's request ID and at: for the
// bucket the units booked after the last one spent (units skipped before
// it are holes the key's state cannot take back), for the fixed window
// every unit not spent while its window lasts. n is 0 when there is
// nothing to give back.
func (l *Lease) End(now time.Time) (n int64, at time.Time) {
	if l.ended {
		return 0, l.at
	}
	l.ended = true
	if !l.bucket {
		if now.UnixMicro() >= l.end {
			return 0, l.at
		}
		return l.n - l.spent, l.at
	}
	return l.n - l.last, l.at
}

// ReturnBy returns the latest time at which End gives back in full what it
// returns, when nothing was booked on the key after the lease: for the
// fixed window, the end of the lease's window (a refund after it gives
// nothing back); for the bucket, the booking's At, the turn of its last
// unit (from then on a refund gives back a unit less for every T that
// passes, as if the key could have been full meanwhile). The caller ends
// the lease a round trip before it when its demand has dropped.
func (l *Lease) ReturnBy() time.Time {
	if !l.bucket {
		return time.UnixMicro(l.end)
	}
	return l.at
}

// Stats are a lease's counts.
type Stats struct {
	Units int64 // booked
	Spent int64
	// Skipped are the units before the last one spent that were not
	// spent: their deadline passed first. They are holes in the key's
	// bookings, which no refund can take back.
	Skipped int64
	// Tail are the units after the last one spent: what End gives back.
	Tail int64
}

// Stats returns the lease's counts so far.
func (l *Lease) Stats() Stats {
	return Stats{Units: l.n, Spent: l.spent, Skipped: l.last - l.spent, Tail: l.n - l.last}
}

// At returns the booking's Result.At, which a refund of its units is
// given.
func (l *Lease) At() time.Time { return l.at }

// ShiftFor returns the Config.Shift a lease needs when other leases on its
// key are given back through store.Store.Refund after it was booked: at most
// others leases of at most maxUnits each, under alg's emission interval,
// rounded up to the µs. Each such refund gives back at most its units
// less those booked after it, so it moves every later unit's X back by at
// most its units × T. It returns 0 for the fixed window, whose refunds
// move nothing.
func ShiftFor(alg algorithms.Algorithm, others int, maxUnits int64) time.Duration {
	if algo.CheckKind(alg) != nil || algo.FamilyOf(alg.Kind()) != algo.FamilyBucket || others <= 0 || maxUnits <= 0 {
		return 0
	}
	p := algo.ParamsOf(alg)
	m := int64(others) * maxUnits
	q, r := mulDiv(m, p.Window.Microseconds(), p.Limit)
	if r > 0 {
		q++
	}
	return time.Duration(q) * time.Microsecond
}

// mulDiv returns a×b/c and a×b mod c for a, b >= 0, c > 0, the quotient
// below 2^63.
func mulDiv(a, b, c int64) (q, r int64) {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi >= uint64(c) {
		return 1<<63 - 1, 0
	}
	uq, ur := bits.Div64(hi, lo, uint64(c))
	return int64(uq), int64(ur)
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
