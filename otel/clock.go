package ratewiseotel

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ClockSource measures how far a store's clock is ahead of this
// process's. *storeredis.Store is one.
type ClockSource interface {
	ClockOffset(ctx context.Context) (offset, uncertainty time.Duration, err error)
}

// ObserveClockOffset reads src's clock offset at every collection and
// reports it as the gauge ratewise.store.clock.offset (src's clock minus
// this process's, in seconds: negative when the store is behind) with
// ratewise.store.clock.uncertainty, how far the reading may be off. Each
// reading is bounded by WithClockTimeout; one that fails records neither
// gauge and counts in ratewise.store.clock.errors by error.type instead.
// Unregister the returned registration to stop reading.
//
// It is meant for the Redis store's default, server-time mode, where
// scripts decide on Redis's clock whatever this process's says: the
// offset moves no decision, but tells how far the Result.At a limiter
// returns, and the windows it counts in, are from this process's clock,
// and whether switching to client time (storeredis.WithClientTime) would
// be safe. For example:
//
//	rs := storeredis.New(client)
//	reg, err := ratewiseotel.ObserveClockOffset(rs, ratewiseotel.WithAttributes(
//		attribute.String("ratewise.store", "sessions")))
//	if err != nil {
//		return err
//	}
//	defer reg.Unregister()
//
// Each collection makes one round trip to the store, on the collecting
// goroutine. It applies WithMeterProvider, WithAttributes (which tell two
// stores apart) and WithClockTimeout.
func ObserveClockOffset(src ClockSource, opts ...Option) (metric.Registration, error) {
	if src == nil {
		return nil, errors.New("ratewiseotel: nil ClockSource")
	}
	cfg := newConfig(opts)
	meter := cfg.meters.Meter(ScopeName)
	offset, err1 := meter.Float64ObservableGauge(MetricClockOffset,
		metric.WithUnit("s"),
		metric.WithDescription("The rate-limit store's clock minus this process's clock."))
	uncertainty, err2 := meter.Float64ObservableGauge(MetricClockUncertainty,
		metric.WithUnit("s"),
		metric.WithDescription("How far the clock offset reading may be off: half its round trip."))
	failures, err3 := meter.Int64ObservableCounter(MetricClockErrors,
		metric.WithUnit("{error}"),
		metric.WithDescription("Clock offset readings that failed."))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("ratewiseotel: %w", err)
	}
	r := &clockReader{src: src, timeout: cfg.clockTimeout}
	r.gauge = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(cfg.attrs...))}
	for c := errNone + 1; c < errorClasses; c++ {
		kv := append(append([]attribute.KeyValue(nil), cfg.attrs...), AttrErrorType.String(c.String()))
		r.errOpts[c] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
	}
	reg, err := meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		r.observe(ctx, o, offset, uncertainty, failures)
		return nil
	}, offset, uncertainty, failures)
	if err != nil {
		return nil, fmt.Errorf("ratewiseotel: %w", err)
	}
	return reg, nil
}

// clockReader is ObserveClockOffset's callback's state.
type clockReader struct {
	src     ClockSource
	timeout time.Duration
	gauge   []metric.ObserveOption
	// errors counts failed readings by class (errNone's stays 0).
	errors  [errorClasses]atomic.Int64
	errOpts [errorClasses][]metric.ObserveOption
}

// observe reads the offset once and reports it, and every class of error
// that has happened.
func (r *clockReader) observe(
	ctx context.Context,
	o metric.Observer,
	offset, uncertainty metric.Float64Observable,
	failures metric.Int64Observable,
) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	off, unc, err := r.src.ClockOffset(ctx)
	if err != nil {
		r.errors[classify(err)].Add(1)
	} else {
		o.ObserveFloat64(offset, off.Seconds(), r.gauge...)
		o.ObserveFloat64(uncertainty, unc.Seconds(), r.gauge...)
	}
	for i := range r.errors {
		if n := r.errors[i].Load(); n > 0 {
			o.ObserveInt64(failures, n, r.errOpts[i]...)
		}
	}
}
