package recommend

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/replay/workload"
)

// Caps on what Measure replays, so that a recommendation for a huge window
// still takes seconds: a sliding log is filled with at most this many
// records and its memory scaled linearly beyond, and the matching
// workloads are scaled down to at most maxAccuracyRequests requests.
const (
	maxMemoryRecords    = 1_000_000
	maxRedisRecords     = 50_000
	maxAccuracyRequests = 2_000_000
	latencySamples      = 2000
)

// Measurements are the figures behind a recommendation and how they were
// taken.
type Measurements struct {
	Figures map[string]Figures
	// Records is the number of records a full window holds; Measured how
	// many were filled to measure the sliding log.
	Records, Measured int64
	// AccuracyLimit is the limit of the matching workloads, the input's
	// limit or a scaled-down one; Workloads names them.
	AccuracyLimit int64
	Workloads     []string
}

// Measure measures every algorithm at the input's size on target: memory
// and latency on a key holding a full window, and accuracy on workloads
// that match the input (Poisson arrivals at 1.2× the rate, and the
// window-boundary attack), replayed on the memory store.
func Measure(ctx context.Context, in Input, target replay.Target, progress func(string)) (*Measurements, error) {
	m := &Measurements{Figures: map[string]Figures{}, Records: in.Limit()}
	capRecords := int64(maxMemoryRecords)
	if target.Name() != "memory" {
		capRecords = maxRedisRecords
	}
	m.Measured = min(m.Records, capRecords)
	for _, k := range algorithms.Kinds() {
		name := k.Name()
		progress(fmt.Sprintf("memory and latency of %s on %s", name, target.Name()))
		// Only a log of requests grows with the records; the others hold
		// the same state after a thousand requests as after a million.
		perRequest := k.Family() == algorithms.FamilyLog && !k.TakesSubWindows()
		records := m.Measured
		if !perRequest {
			records = min(records, 1000)
		}
		if m.Records > k.MaxLimit() {
			continue // such as the compact log, one timestamp per request
		}
		f, err := measureCost(ctx, target, name, records, in.Window, replay.Options{Burst: in.Burst})
		if err != nil {
			return nil, err
		}
		if perRequest && m.Measured < m.Records {
			f.BytesPerKey *= float64(m.Records) / float64(m.Measured)
			f.Extrapolated = true
		}
		m.Figures[name] = f
	}

	m.AccuracyLimit = m.Records
	if 4*m.AccuracyLimit > maxAccuracyRequests {
		m.AccuracyLimit = maxAccuracyRequests / 4
	}
	// The token bucket and GCRA compute in exact integers, which bounds
	// burst × window in microseconds.
	m.AccuracyLimit = max(1, min(m.AccuracyLimit, (1<<51)/in.Window.Microseconds()))
	l := workload.Limit{Count: m.AccuracyLimit, Window: in.Window}
	poisson, err := workload.Poisson(l, 1.2, 3, 1)
	if err != nil {
		return nil, err
	}
	boundary, err := workload.Boundary(l, 1)
	if err != nil {
		return nil, err
	}
	m.Workloads = []string{poisson.Name, boundary.Name}
	progress("accuracy on the matching workloads")
	rep, err := replay.Compare(ctx, replay.Config{
		Workloads: []*workload.Workload{poisson, boundary}, Algorithms: replay.AlgorithmNames,
		Options: replay.Options{Burst: scaledBurst(in.Burst, m.AccuracyLimit, m.Records)}, Targets: []replay.Target{replay.Memory{}},
	})
	if err != nil {
		return nil, err
	}
	for _, r := range rep.Rows {
		f := m.Figures[r.Algorithm]
		if f.Overshoot == nil {
			f.Overshoot = map[string]float64{}
		}
		f.Overshoot[r.Workload] = r.Overshoot
		f.FalseAdmits += r.FalseAdmits
		f.FalseDenials += r.FalseDenials
		m.Figures[r.Algorithm] = f
	}
	return m, nil
}

// measureCost fills one key with records requests evenly spread over one
// window, then times latencySamples more decisions at the same rate, each
// of which expires the oldest record and adds one, and measures the memory
// the key holds.
func measureCost(ctx context.Context, target replay.Target, name string, records int64, window time.Duration, opts replay.Options) (Figures, error) {
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
		if _, err := s.Decide(ctx, key, alg, fill.Start.Add(r.At), 1); err != nil {
			return Figures{}, err
		}
	}
	perKey, ok, err := inst.BytesPerKey(ctx, fill, fill.Keys, alg)
	if err != nil {
		return Figures{}, err
	}
	if !ok {
		return Figures{}, fmt.Errorf("%s cannot report memory for %s", target.Name(), name)
	}
	gap := window / time.Duration(records)
	lat := make([]time.Duration, latencySamples)
	for i := range lat {
		at := fill.Start.Add(window + time.Duration(i)*gap)
		t0 := time.Now()
		if _, err := s.Decide(ctx, key, alg, at, 1); err != nil {
			return Figures{}, err
		}
		lat[i] = time.Since(t0)
	}
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	return Figures{
		Algorithm: name, BytesPerKey: perKey, Store: target.Name(),
		P50: lat[len(lat)/2], P99: lat[len(lat)*99/100],
	}, nil
}

// scaledBurst scales a burst with a limit that was scaled down from full to
// scaled; 0, meaning the limit, stays 0.
func scaledBurst(burst, scaled, full int64) int64 {
	if burst == 0 || scaled == full {
		return burst
	}
	return max(1, burst*scaled/full)
}
