package recommend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/replay/workload"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

// Caps on what Measure replays, so that a recommendation for a huge window
// still takes seconds: a sliding log is filled with at most this many
// records and its memory scaled linearly beyond, and the matching
// workloads use a limit of at most maxAccuracyLimit.
const (
	maxMemoryRecords = 1_000_000
	maxRedisRecords  = 2_000
	maxAccuracyLimit = 10_000
	// timeSamples batches of timeBatch decisions each give a time's median
	// and spread.
	timeSamples = 5
	timeBatch   = 200
)

// WorkloadNames are the workloads accuracy is measured on: Poisson arrivals
// at 1.2× the rate, the window-boundary attack, and the sliding window
// counter's worst case (the limit at the end of one sub-window and again
// when that sub-window drops out).
var WorkloadNames = []string{"poisson", "boundary", "worst"}

// Measurements are the figures behind a recommendation and how they were
// taken.
type Measurements struct {
	Figures map[string]Figures
	// Store names the target the costs were measured on.
	Store string
	// Records is the number of records a full window holds; Measured how
	// many were filled to measure the logs.
	Records, Measured int64
	// AccuracyLimit is the limit of the matching workloads, the input's
	// limit or a scaled-down one.
	AccuracyLimit int64
}

// Measure measures every algorithm at the input's size: memory and time on
// target (Cost) and accuracy on the matching workloads (Accuracy).
func Measure(ctx context.Context, in Input, target replay.Target, progress func(string)) (*Measurements, error) {
	m, err := Cost(ctx, in, target, progress)
	if err != nil {
		return nil, err
	}
	progress("accuracy on the matching workloads")
	if err := Accuracy(ctx, in, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Cost measures memory and time per decision of every algorithm on a key
// holding a full window, on target.
func Cost(ctx context.Context, in Input, target replay.Target, progress func(string)) (*Measurements, error) {
	m := &Measurements{Figures: map[string]Figures{}, Store: target.Name(), Records: in.Limit()}
	capRecords := int64(maxMemoryRecords)
	if target.Name() != "memory" {
		capRecords = maxRedisRecords
	}
	m.Measured = min(m.Records, capRecords)
	for _, k := range algorithms.Kinds() {
		name := k.String()
		if !Measures(in, k) {
			continue // the compact log beyond its largest limit; the calendar window for a window
		}
		progress(fmt.Sprintf("memory and time of %s on %s", name, target.Name()))
		// Only a log of requests grows with the records; the others hold
		// the same state after a thousand requests as after a million.
		perRequest := algo.FamilyOf(k) == algo.FamilyLog && !algo.TakesSubWindows(k)
		records := m.Measured
		if !perRequest {
			records = min(records, 1000)
		}
		f, err := measureCost(ctx, target, name, records, in.Window, replay.Options{SubWindows: in.Options().SubWindows})
		if err != nil {
			return nil, err
		}
		if perRequest && m.Measured < m.Records {
			f.BytesPerKey *= float64(m.Records) / float64(m.Measured)
			f.Extrapolated = true
		}
		m.Figures[name] = f
	}
	return m, nil
}

// redisClient is a target that runs on Redis and can be asked about it.
type redisClient interface {
	Client() redis.UniversalClient
}

// measureCost fills one key with records requests evenly spread over one
// window, measures the memory the key holds, then times timeSamples batches
// of decisions at the same rate, each of which expires the oldest record
// and adds one.
func measureCost(
	ctx context.Context,
	target replay.Target,
	name string,
	records int64,
	window time.Duration,
	opts replay.Options,
) (Figures, error) {
	alg, err := replay.Configure(name, records, window, opts)
	if err != nil {
		return Figures{}, err
	}
	fill, err := workload.Fill(workload.Limit{Count: records, Window: window}, 1)
	if err != nil {
		return Figures{}, err
	}
	inst, err := target.Open(ctx)
	if err != nil {
		return Figures{}, err
	}
	defer inst.Close()
	s := inst.Store()
	key := fill.Keys[0]
	for _, r := range fill.Requests {
		if _, err := s.Decide(ctx, store.Key{Name: key}, alg, fill.Start.Add(r.At), 1); err != nil {
			return Figures{}, err
		}
	}
	perKey, measured, err := inst.BytesPerKey(ctx, fill, fill.Keys, alg)
	if err != nil {
		return Figures{}, err
	}
	if measured == 0 {
		return Figures{}, fmt.Errorf("%s cannot report memory for %s", target.Name(), name)
	}
	var client redis.UniversalClient
	if rc, ok := target.(redisClient); ok {
		client = rc.Client()
	}
	gap := window / time.Duration(records)
	next := 0
	samples := make([]time.Duration, timeSamples)
	for i := range samples {
		var before int64
		var calls0 int64
		if client != nil {
			if calls0, before, err = evalshaStats(ctx, client); err != nil {
				return Figures{}, err
			}
		}
		t0 := time.Now()
		for range timeBatch {
			at := fill.Start.Add(window + time.Duration(next)*gap)
			next++
			if _, err := s.Decide(ctx, store.Key{Name: key}, alg, at, 1); err != nil {
				return Figures{}, err
			}
		}
		samples[i] = time.Since(t0) / timeBatch
		if client != nil {
			calls1, after, err := evalshaStats(ctx, client)
			if err != nil {
				return Figures{}, err
			}
			if calls1 <= calls0 {
				return Figures{}, fmt.Errorf("INFO commandstats counted no EVALSHA for %s", name)
			}
			samples[i] = time.Duration(after-before) * time.Microsecond / time.Duration(calls1-calls0)
		}
	}
	return Figures{Algorithm: name, BytesPerKey: perKey, Store: target.Name(), Time: spreadOf(samples)}, nil
}

func spreadOf(samples []time.Duration) Spread {
	s := slices.Clone(samples)
	slices.Sort(s)
	return Spread{Median: s[len(s)/2], Min: s[0], Max: s[len(s)-1], Samples: len(s)}
}

// evalshaStats sums EVALSHA's calls and microseconds over every master.
func evalshaStats(ctx context.Context, c redis.UniversalClient) (calls, usec int64, err error) {
	var mu sync.Mutex
	err = eachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		stats, err := redisinfo.CommandStats(ctx, n)
		if err != nil {
			return err
		}
		mu.Lock()
		calls += stats["evalsha"].Calls
		usec += stats["evalsha"].Usec
		mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	return calls, usec, nil
}

func eachMaster(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("cannot read the INFO of a %T", c)
}

// Accuracy replays the matching workloads against every algorithm m has
// figures for, on the in-memory store, and records how each did. The
// workloads are generated from a fixed seed, so the figures are exact and
// the same on every run.
func Accuracy(ctx context.Context, in Input, m *Measurements) error {
	// The buckets compute in exact integers, which bounds burst × window in
	// microseconds.
	m.AccuracyLimit = max(1, min(m.Records, maxAccuracyLimit, (1<<51)/in.Window.Microseconds()))
	l := workload.Limit{Count: m.AccuracyLimit, Window: in.Window}
	poisson, err := workload.Poisson(l, 1.2, 3, 1)
	if err != nil {
		return err
	}
	boundary, err := workload.Boundary(l, 1)
	if err != nil {
		return err
	}
	opts := in.Options()
	opts.Burst = scaledBurst(in.Burst, m.AccuracyLimit, m.Records)
	// The worst case is the sliding window counter's, in its sub-windows;
	// without one, a window of one sub-window, the boundary attack.
	subWindows := int64(1)
	if ks := registry.measured(counter, m.Figures); len(ks) > 0 {
		alg, err := ks[0].configure(l.Count, l.Window, opts)
		if err != nil {
			return err
		}
		subWindows = algo.ParamsOf(alg).SubWindows
	}
	worst := worstCase(l, subWindows)
	kinds := registry.with(m.Figures)
	type result struct {
		name string
		wl   string
		acc  replay.Accuracy
		err  error
	}
	var (
		wg      sync.WaitGroup
		results = make(chan result, len(kinds)*3)
		sem     = make(chan struct{}, 2)
	)
	for _, k := range kinds {
		alg, err := k.configure(l.Count, l.Window, opts)
		if err != nil {
			return err
		}
		for _, w := range []*workload.Workload{poisson, boundary, worst} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				acc, err := replay.Replay(ctx, storememory.New(), w, alg)
				results <- result{k.name, w.Name, acc, err}
			}()
		}
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.err != nil {
			return fmt.Errorf("%s on %s: %w", r.name, r.wl, r.err)
		}
		f := m.Figures[r.name]
		if f.Overshoot == nil {
			f.Overshoot = map[string]float64{}
		}
		f.Overshoot[r.wl] = r.acc.Overshoot
		f.FalseAdmits += r.acc.FalseAdmits
		f.FalseDenials += r.acc.FalseDenials
		m.Figures[r.name] = f
	}
	return nil
}

// worstCase is the sliding window counter's worst case for l split into
// n sub-windows: the limit at the last microsecond of a sub-window, and
// the limit again the instant that sub-window drops out, Window−Window/n
// later, twice the limit within one window.
func worstCase(l workload.Limit, n int64) *workload.Workload {
	sub := l.Window.Microseconds() / n
	// Sub-windows start at multiples of their length since the Unix epoch.
	first := (sub - workload.Start.UnixMicro()%sub) % sub
	at1 := time.Duration(first+sub-1) * time.Microsecond
	at2 := time.Duration(first)*time.Microsecond + l.Window
	w := &workload.Workload{
		Name: "worst",
		Description: fmt.Sprintf(
			"one key, %d requests at the end of a sub-window of %v and %d more %v later",
			l.Count,
			time.Duration(sub)*time.Microsecond,
			l.Count,
			at2-at1,
		),
		Limit: l.Count, Window: l.Window, Start: workload.Start, Duration: at2 + time.Microsecond,
		Keys: []string{"user:1"},
	}
	for _, at := range []time.Duration{at1, at2} {
		for range l.Count {
			w.Requests = append(w.Requests, workload.Request{At: at, Key: 0, Cost: 1})
		}
	}
	return w
}

// scaledBurst scales a burst with a limit that was scaled down from full to
// scaled; 0, meaning the limit, stays 0.
func scaledBurst(burst, scaled, full int64) int64 {
	if burst == 0 || scaled == full {
		return burst
	}
	return max(1, burst*scaled/full)
}

// Capacity is what one Redis serves of one algorithm, from the CPU time
// Redis spent per decision under load.
type Capacity struct {
	Algorithm string
	// OneAtATime and Coalesced are decisions per second of one Redis
	// process's CPU: each decision its own round trip, and decisions
	// coalesced into shared round trips (storeredis.WithCoalescing).
	OneAtATime, Coalesced Rate
}

// Rate is a rate measured several times: the median and the range.
type Rate struct{ Median, Min, Max float64 }

// capacityRun is how long each capacity sample drives load.
const capacityRun = 300 * time.Millisecond

// MeasureCapacity drives alg on target's Redis from many goroutines over
// 10,000 keys, one decision per round trip and then coalesced, and divides
// the decisions by the CPU time Redis spent on them (INFO cpu): what one
// Redis process serves, whoever else shares the machine. The figure for
// each mode is the median of three runs.
func MeasureCapacity(ctx context.Context, target replay.Target, alg algorithms.Algorithm) (Capacity, error) {
	rc, ok := target.(redisClient)
	if !ok {
		return Capacity{}, fmt.Errorf("capacity is measured on Redis, not on %s", target.Name())
	}
	c := rc.Client()
	var id [4]byte
	rand.Read(id[:])
	prefix := "ratewise-recommend:" + hex.EncodeToString(id[:]) + ":"
	defer eachMaster(context.Background(), c, func(ctx context.Context, n *redis.Client) error {
		redisinfo.DeleteKeys(ctx, n, prefix)
		return nil
	})
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	out := Capacity{Algorithm: alg.Kind().String()}
	for _, mode := range []struct {
		coalescing, callers int
		into                *Rate
	}{{0, 16, &out.OneAtATime}, {-1, 64, &out.Coalesced}} { // -1: the store's default
		opts := []storeredis.Option{
			storeredis.WithKeyPrefix(prefix),
			storeredis.WithDenyCache(0),
			storeredis.WithWarnings(0, nil),
		}
		if mode.coalescing >= 0 {
			opts = append(opts, storeredis.WithCoalescing(mode.coalescing))
		}
		s := storeredis.New(c, opts...)
		var runs []float64
		for range 3 {
			v, err := driveCPU(ctx, c, s, alg, keys, mode.callers)
			if err != nil {
				return Capacity{}, err
			}
			runs = append(runs, v)
		}
		slices.Sort(runs)
		*mode.into = Rate{Median: runs[1], Min: runs[0], Max: runs[2]}
	}
	return out, nil
}

// driveCPU runs decisions from callers goroutines for capacityRun and
// returns decisions per second of Redis CPU.
func driveCPU(
	ctx context.Context,
	c redis.UniversalClient,
	s *storeredis.Store,
	alg algorithms.Algorithm,
	keys []string,
	callers int,
) (float64, error) {
	cpu0, err := redisCPU(ctx, c)
	if err != nil {
		return 0, err
	}
	var (
		n        atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		firstErr atomic.Value
	)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i += callers {
				if _, err := s.Decide(ctx, store.Key{Name: keys[i%len(keys)]}, alg, time.Now(), 1); err != nil {
					firstErr.CompareAndSwap(nil, err)
					stop.Store(true)
					return
				}
				n.Add(1)
			}
		}()
	}
	time.Sleep(capacityRun)
	stop.Store(true)
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	cpu1, err := redisCPU(ctx, c)
	if err != nil {
		return 0, err
	}
	if cpu1 <= cpu0 {
		return 0, fmt.Errorf("INFO cpu did not advance over %v of load", capacityRun)
	}
	return float64(n.Load()) / (cpu1 - cpu0), nil
}

// redisCPU sums used_cpu_user and used_cpu_sys over every master.
func redisCPU(ctx context.Context, c redis.UniversalClient) (float64, error) {
	var mu sync.Mutex
	total := 0.0
	err := eachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		for _, f := range []string{"used_cpu_user", "used_cpu_sys"} {
			v, err := strconv.ParseFloat(strings.TrimSpace(redisinfo.Field(info, f)), 64)
			if err != nil {
				return fmt.Errorf("INFO cpu: %s: %v", f, err)
			}
			mu.Lock()
			total += v
			mu.Unlock()
		}
		return nil
	})
	return total, err
}
