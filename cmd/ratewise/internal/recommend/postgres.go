package recommend

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/store"
)

// Sizing is what a PostgreSQL deployment of one algorithm needs, measured
// on the database: the disk its table takes per key and the decisions per
// second the database served.
type Sizing struct {
	Algorithm string // the algorithm and its parameters, such as "gcra 100/1m burst 100"
	// Keys were filled through the store, each with Requests decisions
	// over one window (Scaled: a log filled with fewer records than its
	// limit, its bytes scaled up linearly), and ratewise.state grew from
	// Before to After bytes (pg_total_relation_size: the table, its index
	// and TOAST). FillFactor is the table's.
	Keys, Requests int64
	Scaled         bool
	Before, After  int64
	BytesPerKey    float64
	FillFactor     int
	// Load is the decisions per second served to each number of callers.
	Load []Load
}

// Load is what the database served to Callers goroutines deciding on Keys
// keys, each decision its own statement, over three runs.
type Load struct {
	Callers, Keys int
	PerSecond     Rate
	P50, P99      time.Duration // of the median run
}

// postgresPool is a target on PostgreSQL that can be asked about it.
type postgresPool interface {
	Pool() *pgxpool.Pool
}

// Budgets of the sizing: the decisions that fill the keys, the keys to
// fill (enough that the table grows by many pages, which round its size),
// and the most records a log's key is filled with.
const (
	sizingDecisions = 20_000
	minSizingKeys   = 10
	maxSizingKeys   = 10_000
	loadRun         = 300 * time.Millisecond
	loadKeys        = 10_000
)

// MeasurePostgres sizes a PostgreSQL deployment of alg on target: it fills
// keys through the store, reads how much ratewise.state grew and divides
// by the keys, then drives decisions from 1, 4 and 16 goroutines over
// 10,000 keys, and from 16 on one key, whose decisions queue on its row's
// lock, three runs of loadRun each.
func MeasurePostgres(ctx context.Context, target replay.Target, alg algorithms.Algorithm) (Sizing, error) {
	pp, ok := target.(postgresPool)
	if !ok {
		return Sizing{}, fmt.Errorf("sizing is measured on PostgreSQL, not on %s", target.Name())
	}
	s := Sizing{Algorithm: alg.String()}
	if err := s.fill(ctx, target, pp.Pool(), alg); err != nil {
		return Sizing{}, err
	}
	for _, l := range []Load{
		{Callers: 1, Keys: loadKeys}, {Callers: 4, Keys: loadKeys}, {Callers: 16, Keys: loadKeys}, {Callers: 16, Keys: 1},
	} {
		var runs []replay.Timing
		for range 3 {
			tm, err := replay.Time(ctx, target, alg, loadRun, l.Callers, l.Keys)
			if err != nil {
				return Sizing{}, err
			}
			runs = append(runs, tm)
		}
		median := medianRun(runs)
		l.PerSecond = Rate{Min: runs[0].PerSecond, Median: median.PerSecond, Max: runs[2].PerSecond}
		l.P50, l.P99 = median.P50, median.P99
		s.Load = append(s.Load, l)
	}
	return s, nil
}

// medianRun sorts runs by decisions per second and returns the middle one.
func medianRun(runs []replay.Timing) replay.Timing {
	slices.SortFunc(runs, func(a, b replay.Timing) int { return cmp.Compare(a.PerSecond, b.PerSecond) })
	return runs[len(runs)/2]
}

// fillPlan is how fill gives a key of alg a full window's state: requests
// decisions of cost each, gap apart, from the start of a window.
func fillPlan(alg algorithms.Algorithm) (requests, cost int64, gap time.Duration) {
	p := algo.ParamsOf(alg)
	if algo.FamilyOf(alg.Kind()) == algo.FamilyLog && !algo.TakesSubWindows(alg.Kind()) {
		requests, cost = min(algo.MaxCost(alg), maxRedisRecords), 1
	} else {
		subWindows := max(1, p.SubWindows)
		requests, cost = min(algo.MaxCost(alg), subWindows), max(1, algo.MaxCost(alg)/subWindows)
	}
	return requests, cost, p.Window / time.Duration(requests)
}

// windowStart is the start of alg's window around now: windows start at
// multiples of their length since the Unix epoch.
func windowStart(alg algorithms.Algorithm, now time.Time) time.Time {
	us := algo.ParamsOf(alg).Window.Microseconds()
	return time.UnixMicro(now.UnixMicro() / us * us)
}

// fill fills the keys and measures the table's growth. Each key gets a
// full window's state: a log one record per request, up to
// maxRedisRecords; a sliding window counter a request in each sub-window;
// any other one request of the largest cost, which empties a bucket.
//
// The keys are filled in rounds, each key's first request, then each
// key's second, as keys that are all active at once are: the first round
// inserts their rows, packed to the fill factor, and the later ones update
// them, most in place, where the rest of the page leaves room for a new
// version and PostgreSQL prunes the old ones. Filled one after another, a
// key's versions would take the room that the next key's row then finds
// used, and the table would grow by half again.
//
// The first round stops adding keys at a deadline: a round lasts no
// longer, so no key's row, which counts until the gap between its
// requests has passed and a second more (client-time mode's grace),
// expires before the table is measured and is swept away, which would free
// space that later rows take.
func (s *Sizing) fill(ctx context.Context, target replay.Target, pool *pgxpool.Pool, alg algorithms.Algorithm) error {
	var cost int64
	var gap time.Duration
	s.Requests, cost, gap = fillPlan(alg)
	s.Scaled = s.Requests < algo.MaxCost(alg) && cost == 1
	want := min(max(sizingDecisions/s.Requests, minSizingKeys), maxSizingKeys)

	inst, err := target.Open(ctx)
	if err != nil {
		return err
	}
	defer inst.Close()
	if err := pool.QueryRow(ctx, `SELECT pg_total_relation_size('ratewise.state'),
		coalesce((SELECT o.option_value::int FROM pg_class c, pg_options_to_table(c.reloptions) o
			WHERE c.oid = 'ratewise.state'::regclass AND o.option_name = 'fillfactor'), 100)`,
	).Scan(&s.Before, &s.FillFactor); err != nil {
		return err
	}
	var id [4]byte
	rand.Read(id[:])
	ns := "ratewise-sizing-" + hex.EncodeToString(id[:])
	start := windowStart(alg, time.Now())
	deadline := time.Now().Add(500*time.Millisecond + gap/2)
	// One decision at a time: concurrent inserts make PostgreSQL extend
	// the table by many empty pages at once when they wait to extend it,
	// which its size counts, by up to 15% more from one run to the next.
	var keys []store.Key
	for k := uint32(1); k <= uint32(want) && time.Now().Before(deadline); k++ {
		// Keys in no order, as an app's arrive, so that the index splits
		// its pages as it would: k times an odd number is a permutation of
		// the 32-bit numbers.
		key := store.Key{Namespace: ns, Name: fmt.Sprintf("user:%08x", k*2654435761)}
		if _, err := inst.Store().Decide(ctx, key, alg, start, cost); err != nil {
			return err
		}
		keys = append(keys, key)
	}
	for i := int64(1); i < s.Requests; i++ {
		for _, key := range keys {
			if _, err := inst.Store().Decide(ctx, key, alg, start.Add(time.Duration(i)*gap), cost); err != nil {
				return err
			}
		}
	}
	filled := int64(len(keys))
	if err := pool.QueryRow(ctx,
		`SELECT pg_total_relation_size('ratewise.state'), count(*) FROM ratewise.state WHERE key LIKE $1`,
		[]byte("%:"+ns+":%")).Scan(&s.After, &s.Keys); err != nil {
		return err
	}
	if s.Keys != filled || s.Keys == 0 || s.After <= s.Before {
		return fmt.Errorf(
			"sizing: %d of the %d keys filled were in ratewise.state when it was measured, which grew from %d to %d bytes",
			s.Keys,
			filled,
			s.Before,
			s.After,
		)
	}
	s.BytesPerKey = float64(s.After-s.Before) / float64(s.Keys)
	if s.Scaled {
		s.BytesPerKey *= float64(algo.MaxCost(alg)) / float64(s.Requests)
	}
	return nil
}

// write prints the sizing's two tables, what the question's keys take on
// disk, and how its decisions compare with what the database served.
// best is the load of many keys at which the database served the most
// decisions per second; the zero Load when none was measured.
func (s *Sizing) best() Load {
	var best Load
	for _, l := range s.Load {
		if l.Keys > 1 && l.PerSecond.Median > best.PerSecond.Median {
			best = l
		}
	}
	return best
}

// beyond says how many times the most this database served the question
// needs, when that is more than MostPostgres times.
func (s *Sizing) beyond(need float64) string {
	most := s.best().PerSecond.Median
	if most <= 0 || need <= MostPostgres*most {
		return ""
	}
	return fmt.Sprintf("%.3g× the %s decisions per second this PostgreSQL database served here, where the store "+
		"runs on one primary", need/most, perSecond(most))
}

func (s *Sizing) write(w io.Writer, in Input, d Decision, need float64) {
	fmt.Fprintf(w, ". Measured on this PostgreSQL with %s", s.Algorithm)
	if strings.Contains(d.Answer(), " + ") {
		fmt.Fprint(w, " (the set's first limit alone; the set decides both in one statement)")
	}
	fmt.Fprint(w, ":\n\n")
	t := &report.Table{
		Header: []string{"keys filled", "decisions each", "ratewise.state before", "after", "B/key", "fill factor"},
	}
	t.Add(
		report.Int(s.Keys),
		report.Int(s.Requests),
		Bytes(float64(s.Before)),
		Bytes(float64(s.After)),
		Bytes(s.BytesPerKey),
		fmt.Sprintf("%d%%", s.FillFactor),
	)
	t.Write(w, false)
	fmt.Fprintf(
		w,
		"B/key: how much ratewise.state grew (pg_total_relation_size: the table, its index and TOAST) per key "+
			"filled through the store with a full window's state, "+
			"at the table's fill factor, which leaves the rest of each page for a key's next row version",
	)
	if s.Scaled {
		fmt.Fprintf(
			w,
			"; each key held %s of its log's records, and the figure is scaled linearly to all of them",
			report.Int(s.Requests),
		)
	}
	fmt.Fprintln(w, ".")
	if s.Before > (s.After-s.Before)/10 {
		fmt.Fprintf(
			w,
			"The table held %s before: other keys, and dead rows whose space new rows may take, which makes the "+
				"growth smaller than the keys' size.\n",
			Bytes(float64(s.Before)),
		)
	}
	fmt.Fprintln(w)
	t = &report.Table{Header: []string{"callers", "keys", "decisions/s", "range over 3 runs", "p50", "p99"}}
	for _, l := range s.Load {
		t.Add(report.Int(int64(l.Callers)), report.Int(int64(l.Keys)), perSecond(l.PerSecond.Median),
			perSecond(l.PerSecond.Min)+"–"+perSecond(l.PerSecond.Max), report.Latency(l.P50), report.Latency(l.P99))
	}
	best := s.best()
	t.Write(w, false)
	fmt.Fprintf(
		w,
		"decisions/s: each caller one decision at a time, one statement each, for %v per run, from this one process; "+
			"p50 and p99 are each decision's latency as it saw it.\n\n",
		loadRun,
	)

	fmt.Fprintf(
		w,
		"Disk: %s at %s each is %s for ratewise.state while they all count; a key's row stays until the store's "+
			"sweeps delete it after it stops counting.\n",
		report.Keys(in.Keys),
		Bytes(s.BytesPerKey),
		Bytes(s.BytesPerKey*float64(in.Keys)),
	)
	if best.Callers == 0 {
		return
	}
	most := best.PerSecond.Median
	share := fmt.Sprintf("%.0f%% of", 100*need/most)
	if need > most {
		share = fmt.Sprintf("%.3g×", need/most)
	}
	fmt.Fprintf(w, "Decisions: the peak is %s the most this database served here, %s per second to %d callers",
		share, perSecond(most), best.Callers)
	if need <= utilisation*most {
		fmt.Fprintf(w, ", within the %.0f%% that capacity planning fills.\n", 100*utilisation)
	} else {
		fmt.Fprintf(w, ", beyond the %.0f%% that capacity planning fills: measure from the app servers, with their callers, "+
			"or size a Redis with ratewise recommend --redis ADDR.\n", 100*utilisation)
	}
	if hot := s.Load[len(s.Load)-1]; hot.Keys == 1 && hot.PerSecond.Median > 0 {
		if share := in.QPS / hot.PerSecond.Median; share > 0.1 {
			fmt.Fprintf(
				w,
				"Hot key: one key at %.6g requests per second is %.0f%% of the %s decisions per second one key took "+
					"here: its decisions queue on its row's lock.\n",
				in.QPS,
				100*share,
				perSecond(hot.PerSecond.Median),
			)
		}
	}
}
