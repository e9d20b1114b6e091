// Package workload generates the request traces that ratewise compare replays
// against every algorithm. A trace is a list of requests on a simulated
// clock; the generators are seeded, so the same seed always gives the same
// trace and every figure computed from it is exact and repeatable.
package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Start is where every generated trace's simulated clock begins: a whole
// day since the Unix epoch, so window boundaries fall on whole minutes and
// hours, where fixed windows start.
var Start = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// ErrInvalid is wrapped by every error about a workload's parameters.
var ErrInvalid = errors.New("workload: invalid parameter")

// Request is one request of a trace.
type Request struct {
	At   time.Duration // since the trace's Start
	Key  int32         // index into Workload.Keys
	Cost int64
}

// Workload is a trace together with the limit that every algorithm is
// configured with when it replays the trace: Limit per Window.
type Workload struct {
	Name        string
	Description string
	Limit       int64
	Window      time.Duration
	Start       time.Time
	Duration    time.Duration
	// Keys names the keys that Request.Key indexes. Generated keys are
	// "user:<n>".
	Keys     []string
	Requests []Request
}

// Offered is the total cost of the trace's requests.
func (w *Workload) Offered() int64 {
	var n int64
	for _, r := range w.Requests {
		n += r.Cost
	}
	return n
}

// ActiveKeys is the number of distinct keys that send at least one request.
func (w *Workload) ActiveKeys() int {
	seen := make([]bool, len(w.Keys))
	n := 0
	for _, r := range w.Requests {
		if !seen[r.Key] {
			seen[r.Key] = true
			n++
		}
	}
	return n
}

// Limit is the limit every algorithm is configured with: Count per Window.
type Limit struct {
	Count  int64
	Window time.Duration
}

func (l Limit) validate() error {
	if l.Count <= 0 {
		return fmt.Errorf("%w: limit must be > 0, got %d", ErrInvalid, l.Count)
	}
	if l.Window < time.Millisecond {
		return fmt.Errorf("%w: window must be at least 1ms, got %v", ErrInvalid, l.Window)
	}
	return nil
}

// perSecond is the limit's rate in requests per second.
func (l Limit) perSecond() float64 { return float64(l.Count) / l.Window.Seconds() }

// builder accumulates a trace.
type builder struct {
	w   Workload
	rng *rand.Rand
}

func newBuilder(name, desc string, l Limit, d time.Duration, keys int, seed uint64) *builder {
	b := &builder{
		w: Workload{Name: name, Description: desc, Limit: l.Count, Window: l.Window, Start: Start, Duration: d},
		// The name is mixed into the seed so that workloads sharing a seed
		// do not share their random streams.
		rng: rand.New(rand.NewPCG(seed, hashName(name))),
	}
	b.w.Keys = make([]string, keys)
	for i := range b.w.Keys {
		b.w.Keys[i] = fmt.Sprintf("user:%d", i+1)
	}
	return b
}

func hashName(s string) uint64 {
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func (b *builder) add(at time.Duration, key int, cost int64) {
	// The algorithms decide at microsecond resolution; so do the metrics.
	b.w.Requests = append(b.w.Requests, Request{At: at.Truncate(time.Microsecond), Key: int32(key), Cost: cost})
}

// even adds requests at rate per second, evenly spaced, in [from, to).
func (b *builder) even(key int, from, to time.Duration, rate float64) {
	if rate <= 0 {
		return
	}
	gap := time.Duration(float64(time.Second) / rate)
	if gap <= 0 {
		gap = 1
	}
	for at := from; at < to; at += gap {
		b.add(at, key, 1)
	}
}

// poisson adds requests with exponentially distributed gaps, rate(t) per
// second at time t, in [from, to). A rate that varies is sampled by
// thinning against its maximum, peak.
func (b *builder) poisson(key int, from, to time.Duration, peak float64, rate func(time.Duration) float64) {
	if peak <= 0 {
		return
	}
	at := from
	for {
		at += time.Duration(b.rng.ExpFloat64() / peak * float64(time.Second))
		if at >= to {
			return
		}
		if rate == nil || b.rng.Float64()*peak < rate(at) {
			b.add(at, key, 1)
		}
	}
}

func (b *builder) done() *Workload {
	slices.SortStableFunc(b.w.Requests, func(x, y Request) int {
		switch {
		case x.At < y.At:
			return -1
		case x.At > y.At:
			return 1
		}
		return 0
	})
	return &b.w
}

// Steady sends one key's requests evenly spaced at factor times the limit's
// rate, for windows windows.
func Steady(name string, l Limit, factor float64, windows int) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if factor <= 0 || windows <= 0 {
		return nil, fmt.Errorf("%w: rate factor and windows must be > 0, got %g and %d", ErrInvalid, factor, windows)
	}
	d := time.Duration(windows) * l.Window
	b := newBuilder(name, fmt.Sprintf("one key, evenly spaced at %.2g× the limit's rate", factor), l, d, 1, 0)
	b.even(0, 0, d, factor*l.perSecond())
	return b.done(), nil
}

// OnOff sends bursts: on for on at factor times the limit's rate, then off
// for off, starting phase into the trace. With a phase just before a window
// boundary, every burst straddles one.
func OnOff(l Limit, factor float64, on, off, phase time.Duration, windows int) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if on <= 0 || off < 0 || factor <= 0 || windows <= 0 {
		return nil, fmt.Errorf("%w: on/off bursts need on > 0, off >= 0, rate factor > 0 and windows > 0", ErrInvalid)
	}
	d := time.Duration(windows) * l.Window
	b := newBuilder(
		"bursts",
		fmt.Sprintf("one key, on for %v at %.2g× the limit's rate, off for %v", on, factor, off),
		l,
		d,
		1,
		0,
	)
	for start := phase; start < d; start += on + off {
		b.even(0, start, min(start+on, d), factor*l.perSecond())
	}
	return b.done(), nil
}

// Boundary is the window-boundary attack, which lets a fixed window admit up
// to twice its limit: at each of boundaries window boundaries, Limit
// requests arrive in the last second before it and Limit more in the first
// second after it. Attacks are two windows apart, so each one meets a key
// that has had a full window to recover.
func Boundary(l Limit, boundaries int) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if boundaries <= 0 {
		return nil, fmt.Errorf("%w: boundaries must be > 0, got %d", ErrInvalid, boundaries)
	}
	edge := min(time.Second, l.Window/2)
	offset := firstBoundary(l.Window)
	b := newBuilder(
		"boundary",
		fmt.Sprintf(
			"one key, %d requests in the %v before each of %d window boundaries and %d in the %v after",
			l.Count,
			edge,
			boundaries,
			l.Count,
			edge,
		),
		l,
		offset+time.Duration(2*boundaries)*l.Window,
		1,
		0,
	)
	rate := float64(l.Count) / edge.Seconds()
	for i := range boundaries {
		at := offset + time.Duration(2*i+1)*l.Window
		b.even(0, at-edge, at, rate)
		b.even(0, at, at+edge, rate)
	}
	return b.done(), nil
}

// firstBoundary is how long after Start the first window of length window
// starts. Fixed windows start at multiples of their length since the Unix
// epoch; Start is one for any window that divides a day, and the first such
// multiple after it is otherwise.
func firstBoundary(window time.Duration) time.Duration {
	w := window.Microseconds()
	return time.Duration((w-Start.UnixMicro()%w)%w) * time.Microsecond
}

// Poisson sends one key's requests as a Poisson process at factor times the
// limit's rate.
func Poisson(l Limit, factor float64, windows int, seed uint64) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if factor <= 0 || windows <= 0 {
		return nil, fmt.Errorf("%w: rate factor and windows must be > 0, got %g and %d", ErrInvalid, factor, windows)
	}
	d := time.Duration(windows) * l.Window
	b := newBuilder("poisson", fmt.Sprintf("one key, Poisson arrivals at %.2g× the limit's rate", factor), l, d, 1, seed)
	b.poisson(0, 0, d, factor*l.perSecond(), nil)
	return b.done(), nil
}

// Diurnal sends one key's requests over a simulated day as a Poisson process
// whose rate follows the day: low at midnight, highest at noon, between low
// and high times the limit's rate.
func Diurnal(l Limit, low, high float64, seed uint64) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if low < 0 || high <= low {
		return nil, fmt.Errorf("%w: diurnal rates need 0 <= low < high, got %g and %g", ErrInvalid, low, high)
	}
	const day = 24 * time.Hour
	b := newBuilder(
		"diurnal",
		fmt.Sprintf(
			"one key over a day, Poisson, rising from %.2g× the limit's rate at midnight to %.2g× at noon",
			low,
			high,
		),
		l,
		day,
		1,
		seed,
	)
	base := l.perSecond()
	b.poisson(0, 0, day, high*base, func(t time.Duration) float64 {
		phase := (1 - math.Cos(2*math.Pi*float64(t)/float64(day))) / 2 // 0 at midnight, 1 at noon
		return base * (low + (high-low)*phase)
	})
	return b.done(), nil
}

// Zipf sends requests requests as a Poisson process over duration, each
// from one of keys users chosen by a Zipf distribution with exponent s, so
// a few users send most of the traffic and most send little or nothing.
func Zipf(l Limit, keys, requests int, duration time.Duration, s float64, seed uint64) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if keys <= 0 || requests <= 0 || duration <= 0 || s <= 1 {
		return nil, fmt.Errorf("%w: zipf needs keys, requests and duration > 0 and exponent > 1", ErrInvalid)
	}
	b := newBuilder(
		"zipf",
		fmt.Sprintf("%d users, %d requests in %v, users drawn by Zipf (s=%g)", keys, requests, duration, s),
		l,
		duration,
		keys,
		seed,
	)
	z := rand.NewZipf(b.rng, s, 1, uint64(keys-1))
	rate := float64(requests) / duration.Seconds()
	at := time.Duration(0)
	for range requests {
		at += time.Duration(b.rng.ExpFloat64() / rate * float64(time.Second))
		b.add(min(at, duration-1), int(z.Uint64()), 1)
	}
	return b.done(), nil
}

// Fill sends, from each of keys keys, exactly the limit's count of
// requests evenly spaced over one window, so that every key ends the trace
// holding a full window: what a key costs a store at that rate.
func Fill(l Limit, keys int) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if keys <= 0 {
		return nil, fmt.Errorf("%w: keys must be > 0, got %d", ErrInvalid, keys)
	}
	b := newBuilder(
		"fill",
		fmt.Sprintf("%d key(s), each sending %d requests evenly over %v", keys, l.Count, l.Window),
		l,
		l.Window,
		keys,
		0,
	)
	gap := l.Window / time.Duration(l.Count)
	if gap < time.Microsecond {
		return nil, fmt.Errorf("%w: %d requests do not fit in %v at microsecond resolution", ErrInvalid, l.Count, l.Window)
	}
	for i := range l.Count {
		for k := range keys {
			b.add(time.Duration(i)*gap, k, 1)
		}
	}
	return b.done(), nil
}
