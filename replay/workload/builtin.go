package workload

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/algorithms"
)

// Names lists the built-in workloads in the order compare runs them.
var Names = []string{"steady-below", "steady-at", "steady-above", "bursts", "boundary", "poisson", "diurnal", "zipf"}

// DefaultLimit is the limit of the built-in workloads that do not say
// otherwise: 100 per minute.
var DefaultLimit = Limit{Count: 100, Window: time.Minute}

// Builtin returns the named built-in workload, generated from seed.
func Builtin(name string, seed uint64) (*Workload, error) {
	l := DefaultLimit
	switch name {
	case "steady-below":
		return Steady(name, l, 0.8, 5)
	case "steady-at":
		return Steady(name, l, 1, 5)
	case "steady-above":
		return Steady(name, l, 1.5, 5)
	case "bursts":
		// 15 s at 5× the rate from 10 s before each minute: every burst
		// straddles a window boundary.
		return OnOff(l, 5, 15*time.Second, 45*time.Second, 50*time.Second, 5)
	case "boundary":
		return Boundary(l, 3)
	case "poisson":
		return Poisson(l, 1.2, 10, seed)
	case "diurnal":
		return Diurnal(Limit{Count: 60, Window: time.Hour}, 0.2, 1.6, seed)
	case "zipf":
		return Zipf(Limit{Count: 10, Window: time.Minute}, 100_000, 15_000, 10*time.Minute, 1.1, seed)
	}
	return nil, fmt.Errorf(
		"%w: unknown workload %q (known: %s, custom, or a trace file)",
		ErrInvalid,
		name,
		strings.Join(Names, ", "),
	)
}

// All returns every built-in workload, generated from seed, in the order of
// Names.
func All(seed uint64) ([]*Workload, error) {
	var out []*Workload
	for _, name := range Names {
		w, err := Builtin(name, seed)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// Spec describes a custom workload.
type Spec struct {
	Limit Limit
	// Rate is each key's average request rate, per second, whatever the
	// Shape: over the trace, each key sends about Rate × Duration (keys of
	// bursts, which start at their offsets, on average over the keys).
	Rate float64
	// Shape is "steady" (evenly spaced), "poisson" or "bursts": Rate
	// compressed into the bursts, Rate × (On+Off)/On while on and nothing
	// while off. With a Rate of 300/min, On 10s and Off 50s, each burst
	// sends 300 at 1800/min. Each key starts, with a whole burst, at an
	// offset of its own, drawn from Seed uniformly over [0, On+Off), as
	// independent clients do, so that its bursts meet the windows'
	// boundaries at any phase and not only where a window counts them at
	// its best.
	Shape   string
	On, Off time.Duration
	// Aligned, for bursts only, starts every key at once, on the trace's
	// first window boundary: with On+Off a multiple of the window, every
	// burst starts on a boundary, and a fixed window never sees one split
	// across two windows. It shows what aligned traffic, such as a cron
	// job's, does to each algorithm.
	Aligned  bool
	Duration time.Duration
	Keys     int
	Seed     uint64
}

// maxRequests bounds a custom trace, which is held in memory.
const maxRequests = 20_000_000

// Custom generates the workload that spec describes. Each key sends its own
// stream; steady streams start at a random phase so that keys do not all
// arrive at once, and bursts start at an offset of each key's own unless
// spec.Aligned.
func Custom(spec Spec) (*Workload, error) {
	if err := spec.Limit.validate(); err != nil {
		return nil, err
	}
	switch {
	case spec.Rate <= 0 || math.IsInf(spec.Rate, 0) || math.IsNaN(spec.Rate):
		return nil, fmt.Errorf("%w: rate must be > 0, got %g", ErrInvalid, spec.Rate)
	case spec.Duration <= 0:
		return nil, fmt.Errorf("%w: duration must be > 0, got %v", ErrInvalid, spec.Duration)
	case spec.Keys <= 0:
		return nil, fmt.Errorf("%w: keys must be > 0, got %d", ErrInvalid, spec.Keys)
	case spec.Shape == "bursts" && (spec.On <= 0 || spec.Off < 0):
		return nil, fmt.Errorf("%w: bursts need --on > 0 and --off >= 0, got %v and %v", ErrInvalid, spec.On, spec.Off)
	case spec.Aligned && spec.Shape != "bursts":
		return nil, fmt.Errorf("%w: --aligned applies to --shape bursts only, got %q", ErrInvalid, spec.Shape)
	}
	if n := spec.Rate * spec.Duration.Seconds() * float64(spec.Keys); n > maxRequests {
		return nil, fmt.Errorf(
			"%w: %.0f requests is more than the %d a trace may hold; lower the rate, duration or keys",
			ErrInvalid,
			n,
			maxRequests,
		)
	}
	desc := fmt.Sprintf("%d key(s), %s at %s each", spec.Keys, spec.Shape, perMinute(spec.Rate))
	// A burst sends perBurst on average: each sends the whole part of
	// the running total, so that the mean is exact over whole periods.
	var period time.Duration
	var perBurst float64
	if spec.Shape == "bursts" {
		period = spec.On + spec.Off
		perBurst = spec.Rate * period.Seconds()
		start := "each key from an offset of its own"
		if spec.Aligned {
			start = "every key's at once, from a window boundary"
		}
		desc = fmt.Sprintf(
			"%d key(s), bursts: %s on average, %s for %s every %s, %s",
			spec.Keys,
			perMinute(spec.Rate),
			perMinute(perBurst/spec.On.Seconds()),
			shortDuration(spec.On),
			shortDuration(period),
			start,
		)
	}
	b := newBuilder("custom", desc, spec.Limit, spec.Duration, spec.Keys, spec.Seed)
	for k := range spec.Keys {
		switch spec.Shape {
		case "steady":
			phase := time.Duration(b.rng.Float64() * float64(time.Second) / spec.Rate)
			if spec.Keys == 1 {
				phase = 0
			}
			b.even(k, phase, spec.Duration, spec.Rate)
		case "poisson":
			b.poisson(k, 0, spec.Duration, spec.Rate, nil)
		case "bursts":
			// The key starts with a whole burst at its offset, as a
			// client that starts then does, and sends nothing before: a
			// burst already under way, cut at the trace's start, would
			// start on the window boundary at 0 for every key, aligned
			// whatever the offsets.
			start := firstBoundary(spec.Limit.Window)
			if !spec.Aligned {
				start = time.Duration(b.rng.Int64N(int64(period)))
			}
			for j := 0.0; start < spec.Duration; j, start = j+1, start+period {
				n := int64(math.Floor((j+1)*perBurst)) - int64(math.Floor(j*perBurst))
				for i := range n {
					if at := start + time.Duration(int64(spec.On)*i/n); at < spec.Duration {
						b.add(at, k, 1)
					}
				}
			}
		default:
			return nil, fmt.Errorf("%w: unknown shape %q (known: steady, poisson, bursts)", ErrInvalid, spec.Shape)
		}
	}
	if len(b.w.Requests) == 0 {
		return nil, fmt.Errorf(
			"%w: %s for %v sends no request; raise the rate, the duration or the keys",
			ErrInvalid,
			perMinute(spec.Rate),
			spec.Duration,
		)
	}
	return b.done(), nil
}

// perMinute prints a rate given per second as per minute: "300/min".
func perMinute(perSecond float64) string {
	return strconv.FormatFloat(perSecond*60, 'g', 4, 64) + "/min"
}

// shortDuration prints d without zero units: "1m", not "1m0s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseRate reads a rate such as "150/min", "2/s", "10/1h", "2.5/s" or
// "2.5" (per second) and returns it in requests per second. The period is
// read by algorithms.ParseRate, as the library reads rates.
func ParseRate(s string) (float64, error) {
	num, per, found := strings.Cut(strings.TrimSpace(s), "/")
	n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || n <= 0 || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%w: rate %q: want a positive number such as 150/min, 2/s or 2.5", ErrInvalid, s)
	}
	if !found {
		return n, nil
	}
	one, err := algorithms.ParseRate("1/" + per)
	if err != nil {
		return 0, fmt.Errorf("%w: rate %q: %w", ErrInvalid, s, err)
	}
	return n / one.Period.Seconds(), nil
}
