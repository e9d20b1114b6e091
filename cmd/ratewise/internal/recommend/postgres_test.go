package recommend

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/testkit/pgtest"
	"github.com/ratewise/ratewise/replay"
	"github.com/ratewise/ratewise/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// dialPostgres returns a target on a database of its own on the package's
// shared PostgreSQL: no other test's deleted rows, which autovacuum comes
// to clean up, share its table.
func dialPostgres(t *testing.T) *replay.Postgres {
	t.Helper()
	srv := pgtest.Shared(t)
	admin, err := pgxpool.New(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	databases++
	db := fmt.Sprintf("sizing_%d", databases)
	if _, err := admin.Exec(context.Background(), "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(fmt.Sprintf("postgres://ratewise@127.0.0.1:%d/%s?sslmode=disable", srv.Port, db))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 20
	target, err := replay.DialPostgres(context.Background(), cfg, "the test's PostgreSQL")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(target.Close)
	return target
}

// databases counts the databases dialPostgres made on the shared server.
var databases int

// The sizing fills keys through the store and divides ratewise.state's
// growth by them: a figure that agrees with the other way bytes per key are
// measured on PostgreSQL (compare's: the rows copied into a temporary
// table, packed), for a state of one decision and for logs that grow with
// each, whose keys' rows are updated in place as keys active at once are.
func TestSizingAgreesWithCopies(t *testing.T) {
	ctx := context.Background()
	for _, alg := range []algorithms.Algorithm{
		algorithms.FixedWindow{Limit: 100, Window: time.Minute},
		algorithms.SlidingWindow{Limit: 100, Window: time.Minute, SubWindows: 10},
		algorithms.SlidingLog{Limit: 50, Window: time.Minute},
	} {
		t.Run(alg.Kind().String(), func(t *testing.T) {
			target := dialPostgres(t)
			var s Sizing
			if err := s.fill(ctx, target, target.Pool(), alg); err != nil {
				t.Fatal(err)
			}
			requests, cost, gap := fillPlan(alg)
			if s.Keys < minSizingKeys || s.Requests != requests || s.Scaled || s.FillFactor != 70 {
				t.Errorf(
					"filled %d keys with %d decisions each (scaled %v) at fill factor %d; want at least %d keys, %d "+
						"decisions, not scaled, the schema's 70",
					s.Keys,
					s.Requests,
					s.Scaled,
					s.FillFactor,
					minSizingKeys,
					requests,
				)
			}
			// One key with the same state, copied.
			inst, err := target.Open(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer inst.Close()
			start := windowStart(alg, time.Now())
			for i := range requests {
				if _, err := inst.Store().Decide(
					ctx, store.Key{Name: "user:00000001"}, alg, start.Add(time.Duration(i)*gap), cost,
				); err != nil {
					t.Fatal(err)
				}
			}
			copied, _, err := inst.BytesPerKey(ctx, nil, nil, alg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf(
				"%d keys of %d decisions: the table grew by %.0f B per key; copies of one key's row take %.0f B",
				s.Keys,
				s.Requests,
				s.BytesPerKey,
				copied,
			)
			// The two differ by the keys' lengths; by the index: keys that
			// arrive in no order split its pages in halves, copies of one
			// key in order fill them; by updates, which fill the room that
			// inserts leave on a page (0.89 times, for the counter); and by
			// updates that do not fit on their page, when a transaction
			// elsewhere on the server (a sweep, autovacuum) keeps PostgreSQL
			// from pruning the versions before them: up to 1.3 times on a
			// busy machine, and more beside an autovacuum of the table, which
			// is why each algorithm has a database of its own. Filled one key
			// after another, the table grows by 2.4 times.
			if lo, hi := copied*0.8, copied*1.5; s.BytesPerKey < lo || s.BytesPerKey > hi {
				t.Errorf(
					"the table grew by %.0f B per key filled; copies of one key's row take %.0f B: want 0.8 to 1.5 times that",
					s.BytesPerKey,
					copied,
				)
			}
		})
	}
}

// The sizing measures load at every number of callers, with the hot key
// last.
func TestMeasurePostgres(t *testing.T) {
	target := dialPostgres(t)
	s, err := MeasurePostgres(
		context.Background(),
		target,
		algorithms.GCRA{Rate: algorithms.Rate{Count: 100, Period: time.Minute}, Burst: 100},
	)
	if err != nil {
		t.Fatal(err)
	}
	if s.Keys < minSizingKeys || s.BytesPerKey <= 0 || s.Algorithm != "gcra 100/1m burst 100" {
		t.Errorf("sizing %+v: want keys filled and measured", s)
	}
	var callers []int
	for _, l := range s.Load {
		callers = append(callers, l.Callers)
		if l.PerSecond.Median <= 0 || l.PerSecond.Min > l.PerSecond.Median || l.PerSecond.Median > l.PerSecond.Max ||
			l.P50 <= 0 ||
			l.P99 < l.P50 {
			t.Errorf("%d callers on %d keys: %+v", l.Callers, l.Keys, l)
		}
	}
	if hot := s.Load[len(s.Load)-1]; len(s.Load) != 4 || hot.Keys != 1 {
		t.Errorf(
			"load with %v callers, the last on %d keys; want 1, 4 and 16 callers, then 16 on one key",
			callers,
			hot.Keys,
		)
	}
}

// The PostgreSQL sizing prints its two tables and says, from the figures,
// what the question's keys take on disk and whether its peak fits.
func TestSizingSaysWhatItMeasured(t *testing.T) {
	in := Input{
		QPS:           100.0 / 60,
		Window:        time.Minute,
		Precision:     "approx",
		Keys:          100_000,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	s := &Sizing{
		Algorithm:   "gcra 100/1m burst 100",
		Keys:        10_000,
		Requests:    1,
		Before:      40_000,
		After:       3_840_000,
		BytesPerKey: 380,
		FillFactor:  70,
		Load: []Load{
			{
				Callers:   1,
				Keys:      10_000,
				PerSecond: Rate{Median: 2000, Min: 1900, Max: 2100},
				P50:       400 * time.Microsecond,
				P99:       time.Millisecond,
			},
			{
				Callers:   16,
				Keys:      10_000,
				PerSecond: Rate{Median: 12_000, Min: 11_000, Max: 13_000},
				P50:       time.Millisecond,
				P99:       5 * time.Millisecond,
			},
			{
				Callers:   16,
				Keys:      1,
				PerSecond: Rate{Median: 3000, Min: 2900, Max: 3100},
				P50:       5 * time.Millisecond,
				P99:       9 * time.Millisecond,
			},
		},
	}
	var out bytes.Buffer
	writeDeployment(&out, in, &Measurements{}, Decision{Algorithm: "gcra"}, s)
	got := out.String()
	for _, want := range []string{
		"Measured on this PostgreSQL with gcra 100/1m burst 100:",
		"keys filled  decisions each  ratewise.state before    after  B/key  fill factor\n",
		"     10,000               1                  40 KB  3.84 MB  380 B          70%\n",
		"at the table's fill factor",
		"Disk: 100,000 keys at 380 B each is 38 MB for ratewise.state",
		// 166,667 decisions per second at the limit, against 12,000.
		"the peak is 13.9× the most this database served here, 12,000 per second to 16 callers, beyond the 50%",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the sizing does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Hot key") {
		t.Errorf("a key at 1.67 requests per second is called hot:\n%s", got)
	}
	in.QPS, in.Keys = 1000, 1
	out.Reset()
	writeDeployment(&out, in, &Measurements{}, Decision{Algorithm: "gcra"}, s)
	if got := out.String(); !strings.Contains(
		got,
		"Hot key: one key at 1000 requests per second is 33% of the 3,000 decisions per second one key took here",
	) ||
		!strings.Contains(
			got,
			"the peak is 8% of the most this database served here, 12,000 per second to 16 callers, within the 50%",
		) {
		t.Errorf("a key at 1,000 requests per second of 3,000 is not hot, or does not fit:\n%s", got)
	}
}

// medianRun orders runs whose rates differ by less than one decision a
// second too: the figures CI printed once, when a comparison truncated to
// an integer left them unsorted and the minimum above the median.
func TestMedianRunOrdersCloseRates(t *testing.T) {
	runs := []replay.Timing{
		{PerSecond: 3352.501679781101},
		{PerSecond: 3351.978202192163},
		{PerSecond: 3560.105373163479},
	}
	m := medianRun(runs)
	if runs[0].PerSecond != 3351.978202192163 || m.PerSecond != 3352.501679781101 ||
		runs[2].PerSecond != 3560.105373163479 {
		t.Fatalf("runs %+v, median %+v: want them sorted, the median 3352.50", runs, m)
	}
}
