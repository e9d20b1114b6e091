package ratewiseotel_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"

	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storeredis"
)

var _ ratewiseotel.ClockSource = (*storeredis.Store)(nil)

// fakeClock is a ClockSource that answers what it is told to, and
// remembers how many times it was read and the last deadline it was given.
type fakeClock struct {
	mu          sync.Mutex
	offset, unc time.Duration
	err         error
	hang        bool // wait for the context to end
	reads       int
	timeLeft    time.Duration // until the last read's deadline; 0 for none
}

func (c *fakeClock) set(offset, unc time.Duration, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.unc, c.err = offset, unc, err
}

func (c *fakeClock) ClockOffset(ctx context.Context) (time.Duration, time.Duration, error) {
	c.mu.Lock()
	c.reads++
	c.timeLeft = 0
	if d, ok := ctx.Deadline(); ok {
		c.timeLeft = time.Until(d)
	}
	hang := c.hang
	c.mu.Unlock()
	if hang {
		select {
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("storeredis: %w", ctx.Err())
		case <-time.After(5 * time.Second):
			return 0, 0, errors.New("fakeClock: no deadline within 5s")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.unc, c.err
}

func (c *fakeClock) stats() (reads int, timeLeft time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads, c.timeLeft
}

// The offset and its uncertainty are read at each collection and reported
// in seconds, with WithAttributes'; a reading that fails reports neither,
// not even the last good one, and counts as an error of its class.
func TestClockOffset(t *testing.T) {
	reader, mp := newReader(t)
	src := &fakeClock{}
	reg, err := ratewiseotel.ObserveClockOffset(src, ratewiseotel.WithMeterProvider(mp),
		ratewiseotel.WithAttributes(attribute.String("ratewise.store", "sessions")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	const labels = "ratewise.store=sessions"
	unavailable := fmt.Errorf("%w: connection refused", store.ErrUnavailable)

	for _, step := range []struct {
		name        string
		offset, unc time.Duration
		err         error
		// want: gauges (nil for absent) and errors by class.
		offsets, uncs map[string]float64
		errors        map[string]int64
	}{
		{name: "ahead", offset: 1500 * time.Millisecond, unc: 2 * time.Millisecond,
			offsets: map[string]float64{labels: 1.5}, uncs: map[string]float64{labels: 0.002}},
		{name: "behind", offset: -250 * time.Millisecond, unc: 100 * time.Microsecond,
			offsets: map[string]float64{labels: -0.25}, uncs: map[string]float64{labels: 0.0001}},
		{name: "down", err: unavailable,
			errors: map[string]int64{"error.type=unavailable," + labels: 1}},
		{name: "still down", err: unavailable,
			errors: map[string]int64{"error.type=unavailable," + labels: 2}},
		{name: "canceled", err: context.Canceled,
			errors: map[string]int64{"error.type=unavailable," + labels: 2, "error.type=canceled," + labels: 1}},
		{name: "back", offset: time.Second, unc: time.Millisecond,
			offsets: map[string]float64{labels: 1}, uncs: map[string]float64{labels: 0.001},
			errors: map[string]int64{"error.type=unavailable," + labels: 2, "error.type=canceled," + labels: 1}},
	} {
		src.set(step.offset, step.unc, step.err)
		rm := collect(t, reader)
		if got := gauges(t, rm, ratewiseotel.MetricClockOffset); !maps.Equal(got, step.offsets) {
			t.Errorf("%s: %s: got %v, want %v", step.name, ratewiseotel.MetricClockOffset, got, step.offsets)
		}
		if got := gauges(t, rm, ratewiseotel.MetricClockUncertainty); !maps.Equal(got, step.uncs) {
			t.Errorf("%s: %s: got %v, want %v", step.name, ratewiseotel.MetricClockUncertainty, got, step.uncs)
		}
		if got := sums(t, rm, ratewiseotel.MetricClockErrors); !maps.Equal(got, step.errors) {
			t.Errorf("%s: %s: got %v, want %v", step.name, ratewiseotel.MetricClockErrors, got, step.errors)
		}
	}
	if reads, _ := src.stats(); reads != 6 {
		t.Errorf("reads: got %d, want one per collection, 6", reads)
	}
	m, _ := find(collect(t, reader), ratewiseotel.MetricClockOffset)
	if got, want := m.Unit, "s"; got != want {
		t.Errorf("unit: got %q, want %q", got, want)
	}
}

// Each reading is bounded by WithClockTimeout: one that takes longer
// fails as deadline_exceeded, and the collection returns.
func TestClockOffsetTimeout(t *testing.T) {
	reader, mp := newReader(t)
	src := &fakeClock{hang: true}
	const timeout = 20 * time.Millisecond
	reg, err := ratewiseotel.ObserveClockOffset(
		src,
		ratewiseotel.WithMeterProvider(mp),
		ratewiseotel.WithClockTimeout(timeout),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	rm := collect(t, reader)
	if _, timeLeft := src.stats(); timeLeft <= 0 || timeLeft > timeout {
		t.Errorf("the reading had %v left, want a deadline within %v", timeLeft, timeout)
	}
	if got := gauges(t, rm, ratewiseotel.MetricClockOffset); got != nil {
		t.Errorf("offset after a timeout: %v, want none", got)
	}
	if got, want := sums(t, rm, ratewiseotel.MetricClockErrors), map[string]int64{
		"error.type=deadline_exceeded": 1,
	}; !maps.Equal(got, want) {
		t.Errorf("errors: got %v, want %v", got, want)
	}
}

// Without WithClockTimeout, a reading has DefaultClockTimeout.
func TestClockOffsetDefaultTimeout(t *testing.T) {
	reader, mp := newReader(t)
	src := &fakeClock{}
	reg, err := ratewiseotel.ObserveClockOffset(src, ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })
	collect(t, reader)
	if _, timeLeft := src.stats(); timeLeft <= ratewiseotel.DefaultClockTimeout/2 ||
		timeLeft > ratewiseotel.DefaultClockTimeout {
		t.Errorf("the reading had %v left, want about %v", timeLeft, ratewiseotel.DefaultClockTimeout)
	}
}

// Unregistering stops the readings.
func TestClockOffsetUnregister(t *testing.T) {
	reader, mp := newReader(t)
	src := &fakeClock{offset: time.Second}
	reg, err := ratewiseotel.ObserveClockOffset(src, ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	if got := gauges(t, collect(t, reader), ratewiseotel.MetricClockOffset); len(got) != 1 {
		t.Fatalf("offset: got %v, want one value", got)
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := gauges(t, collect(t, reader), ratewiseotel.MetricClockOffset); got != nil {
		t.Errorf("offset after Unregister: got %v, want none", got)
	}
	if reads, _ := src.stats(); reads != 1 {
		t.Errorf("reads: got %d, want 1", reads)
	}
}

func TestClockOffsetNilSource(t *testing.T) {
	if _, err := ratewiseotel.ObserveClockOffset(nil); err == nil {
		t.Fatal("ObserveClockOffset(nil): no error")
	}
}

// The Redis store is a ClockSource: its offset is reported, and when
// Redis is gone, an error of class unavailable instead.
func TestClockOffsetStoreRedis(t *testing.T) {
	reader, mp := newReader(t)
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { c.Close() })
	reg, err := ratewiseotel.ObserveClockOffset(storeredis.New(c), ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Unregister() })

	// miniredis's clock stands still once set, so the offset read is
	// ahead less the time from SetTime to the reading, give or take the
	// reading's uncertainty.
	const ahead = 90 * time.Second
	before := time.Now()
	m.SetTime(before.Add(ahead))
	rm := collect(t, reader)
	took := time.Since(before).Seconds()
	offset, unc := gauges(t, rm, ratewiseotel.MetricClockOffset)[""],
		gauges(t, rm, ratewiseotel.MetricClockUncertainty)[""]
	if d := ahead.Seconds() - offset; d < -unc || d > took+unc {
		t.Errorf("offset: %v s ± %v s, want %v s less at most %v s", offset, unc, ahead.Seconds(), took)
	}

	m.Close()
	rm = collect(t, reader)
	if got := gauges(t, rm, ratewiseotel.MetricClockOffset); got != nil {
		t.Errorf("offset with Redis gone: %v, want none", got)
	}
	if got, want := sums(t, rm, ratewiseotel.MetricClockErrors), map[string]int64{
		"error.type=unavailable": 1,
	}; !maps.Equal(got, want) {
		t.Errorf("errors: got %v, want %v", got, want)
	}
}
