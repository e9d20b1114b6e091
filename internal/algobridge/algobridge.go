// Package algobridge hands package algorithms' store-facing operations (the
// decision step, refunds, bookings, packing and the checks stores make) to
// ratewise's own packages without exporting them to users.
//
// It is a leaf that names no ratewise type: algorithms registers its
// operations here when it is initialised, and package internal/algo, which
// imports algorithms, reads them back under algorithms' own types. Users
// see only the algorithms' parameters, Validate and String.
package algobridge

import (
	"strconv"
	"time"
)

// Ops are the operations algorithms registers, over its Algorithm (A),
// its per-key state (S), its Result (R), its Kind (K) and its Params (P).
// Each field is one operation; see internal/algo for what each does.
// Being functions, not methods, they export nothing from algorithms.
type Ops[A, S, R, K, P any] struct {
	Decide         func(a A, state S, now time.Time, cost int64) (S, R)
	Refund         func(a A, state S, now, at time.Time, n int64) (S, bool)
	Reserves       func(a A) bool
	Reserve        func(a A, state S, now time.Time, cost int64, maxWait time.Duration) (S, R, time.Duration)
	Keeps          func(a A, state S, now time.Time, cost int64) bool
	Packs          func(a A) bool
	Pack           func(a A, state S) (w Words, tag int64, ok bool)
	Unpack         func(a A, w Words, tag int64, into S) S
	Clone          func(a A, state S) S
	Inspect        func(a A, w Words, tag int64, now time.Time, cost int64) (res R, keeps bool)
	Derive         func(a A) Derived
	DecidePacked   func(a A, d *Derived, w Words, tag int64, has bool, now time.Time, cost int64) (Words, int64, R, bool)
	Scope          func(a A) Scope
	Quota          func(a A) Quota
	MaxCost        func(a A) int64
	Charge         func(res R, a A, cost int64) R
	WithQuotaLimit func(a A, n int64) A
	BucketLatest   func(state S) (int64, bool)
	Params         func(a A) P

	Family          func(k K) Family
	TakesBurst      func(k K) bool
	TakesSubWindows func(k K) bool
	MaxLimit        func(k K) int64
	Nominal         func(k K, limit int64, window time.Duration, subWindows int64) (A, error)

	CheckKind     func(a A) error
	CheckDecision func(a A, now time.Time, cost int64) error
	CheckRefund   func(a A, now, at time.Time, n int64) error
	CheckCost     func(a A, cost int64) error
	CheckTime     func(t time.Time) error
	CheckMaxWait  func(maxWait time.Duration) error
}

// Words is a state packed into two integers (see internal/algo.Pack).
type Words [2]int64

// Derived is what an algorithm's packed step derives from its
// parameters (see internal/algo.Derive).
type Derived [7]int64

var ops any

// Register records algorithms' operations; algorithms calls it once, when
// it is initialised.
func Register(o any) { ops = o }

// Registered returns what Register recorded.
func Registered() any { return ops }

// Scope is the part of an algorithm's parameters that gives its state its
// meaning: the window of FixedWindow, SlidingLog and SlidingWindow (with
// SubWindows for the latter), and the rate's period for TokenBucket and
// GCRA. The limit, capacity, burst and rate count are not part of it, so
// they can change while a key keeps what it used.
//
// Scope is comparable, so stores can key state by it without allocating.
type Scope struct {
	Window     time.Duration
	SubWindows int64 // 0 unless the algorithm splits its window
}

// String returns the scope in a compact, exact form used in storage keys:
// the window in its largest whole unit, such as "1m", "90s", "1500ms" or
// "720h", followed by "/" and the sub-windows if there are any ("1m/6").
func (s Scope) String() string {
	var buf [32]byte
	return string(s.Append(buf[:0]))
}

// Append appends String's form of s to b: a store that builds a key in a
// buffer of its own names the scope without allocating.
func (s Scope) Append(b []byte) []byte {
	b = appendCompactDuration(b, s.Window)
	if s.SubWindows != 0 {
		b = append(b, '/')
		b = strconv.AppendInt(b, s.SubWindows, 10)
	}
	return b
}

// CompactDuration writes d in the largest of h, m, s, ms and us that
// divides it exactly; one unit per value, so two durations differ exactly
// when their strings do.
func CompactDuration(d time.Duration) string {
	var buf [32]byte
	return string(appendCompactDuration(buf[:0], d))
}

func appendCompactDuration(b []byte, d time.Duration) []byte {
	for _, u := range [...]struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.d == 0 {
			return append(strconv.AppendInt(b, int64(d/u.d), 10), u.name...)
		}
	}
	return append(strconv.AppendInt(b, int64(d), 10), "ns"...)
}

// Quota is what a key admits: at most Limit cost at once, which an idle key
// gets back in full after Window. HTTP rate-limit headers report it.
type Quota struct {
	Limit  int64
	Window time.Duration
}

// Family is a class of algorithms whose decisions follow one model, so that
// tests and tools can state what to expect of every algorithm in it.
type Family int

const (
	// FamilyFixedWindow counts per window aligned to the Unix epoch: exact
	// per window, up to 2×Limit across a boundary.
	FamilyFixedWindow Family = iota + 1
	// FamilyLog decides as a sliding log whose timestamps are rounded down
	// to a quantum: to the microsecond for an algorithm without sub-windows,
	// the exact sliding log; to the sub-window for one with them, the
	// sliding window counter.
	FamilyLog
	// FamilyBucket refills continuously at a rate up to a burst: the token
	// bucket and GCRA, which decide identically.
	FamilyBucket
)
