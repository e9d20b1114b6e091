package workload

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBuiltinsAreDeterministic(t *testing.T) {
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			a, err := Builtin(name, 7)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Builtin(name, 7)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%s: the same seed gave different traces", name)
			}
			if len(a.Requests) == 0 {
				t.Fatalf("%s: empty trace", name)
			}
			for i := 1; i < len(a.Requests); i++ {
				if a.Requests[i].At < a.Requests[i-1].At {
					t.Fatalf("%s: request %d at %v comes before %v", name, i, a.Requests[i].At, a.Requests[i-1].At)
				}
			}
		})
	}
}

func TestRandomWorkloadsDependOnTheSeed(t *testing.T) {
	for _, name := range []string{"poisson", "diurnal", "zipf"} {
		a, _ := Builtin(name, 1)
		b, _ := Builtin(name, 2)
		if reflect.DeepEqual(a.Requests, b.Requests) {
			t.Errorf("%s: seeds 1 and 2 gave the same trace", name)
		}
	}
}

func TestBoundaryAttackSurroundsWindowBoundaries(t *testing.T) {
	w, err := Boundary(Limit{Count: 100, Window: time.Minute}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(w.Requests), 600; got != want {
		t.Fatalf("requests: got %d, want %d", got, want)
	}
	before, after := 0, 0
	for _, r := range w.Requests {
		at := w.Start.Add(r.At)
		into := at.Sub(at.Truncate(time.Minute))
		switch {
		case into >= 59*time.Second:
			before++
		case into < time.Second:
			after++
		default:
			t.Fatalf("request at %v is not within a second of a minute boundary", r.At)
		}
	}
	if before != 300 || after != 300 {
		t.Fatalf("before/after boundaries: got %d/%d, want 300/300", before, after)
	}
}

func TestZipfSpreadsOverManyUsers(t *testing.T) {
	w, err := Builtin("zipf", 1)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(w.Keys), 100_000; got != want {
		t.Fatalf("users: got %d, want %d", got, want)
	}
	counts := map[int32]int{}
	for _, r := range w.Requests {
		counts[r.Key]++
	}
	// Zipf: the busiest user sends far more than an even share, and many
	// users send something.
	if counts[0] < 10*len(w.Requests)/len(counts) || len(counts) < 1000 {
		t.Fatalf("not Zipf-shaped: busiest user %d requests, %d active users", counts[0], len(counts))
	}
}

func TestReadTrace(t *testing.T) {
	in := `# recorded requests
2026-06-01T10:00:01Z alice 2
2026-06-01T10:00:00.5Z bob
1780308000.25,alice

2026-06-01T10:00:02Z
`
	w, err := ReadTrace(strings.NewReader(in), "t.log", Limit{Count: 10, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.Keys, []string{"alice", "bob", "trace"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("keys: got %v, want %v", got, want)
	}
	type req struct {
		at   string
		key  string
		cost int64
	}
	var got []req
	for _, r := range w.Requests {
		got = append(got, req{w.Start.Add(r.At).Format("15:04:05.000"), w.Keys[r.Key], r.Cost})
	}
	want := []req{
		{"10:00:00.250", "alice", 1},
		{"10:00:00.500", "bob", 1},
		{"10:00:01.000", "alice", 2},
		{"10:00:02.000", "trace", 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("requests:\ngot  %v\nwant %v", got, want)
	}
}

// A CSV header on the first line is skipped; an unparsable line anywhere
// else, or a first line that holds figures, is still an error naming the
// file and line.
func TestReadTraceSkipsAHeader(t *testing.T) {
	l := Limit{Count: 10, Window: time.Minute}
	cases := []struct {
		name, in string
		// err is what the error must say; "" means no error.
		err string
	}{
		{"csv header", "time,key,cost\n1780308000,alice,2\n1780308001,bob,1\n", ""},
		{"header after a comment", "# exported\n\ntimestamp\tuser\n1780308000\talice\n1780308001\tbob\n", ""},
		{"quoted header", "\"time\",\"key\"\n1780308000,alice\n1780308001,bob\n", ""},
		{"named time column with digits", "ts,key2\n1780308000,alice\n1780308001,bob\n", ""},
		{"header on a later line", "1780308000,alice\ntime,key,cost\n", "t.csv:2"},
		{"second header", "time,key\ntime,key\n", "t.csv:2"},
		{"first line holds figures", "1780308000x,alice\n1780308001,bob\n", "t.csv:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := ReadTrace(strings.NewReader(c.in), "t.csv", l)
			if c.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want ErrInvalid saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := w.Keys, []string{"alice", "bob"}; !reflect.DeepEqual(got, want) {
				t.Fatalf("keys: got %v, want %v", got, want)
			}
		})
	}
}

func TestInvalidInput(t *testing.T) {
	l := Limit{Count: 10, Window: time.Minute}
	cases := []struct {
		name string
		err  func() error
	}{
		{"unknown builtin", func() error { _, err := Builtin("nope", 1); return err }},
		{"zero limit", func() error { _, err := Steady("s", Limit{Window: time.Minute}, 1, 1); return err }},
		{"zero rate", func() error {
			_, err := Custom(Spec{Limit: l, Shape: "steady", Duration: time.Minute, Keys: 1})
			return err
		}},
		{"unknown shape", func() error {
			_, err := Custom(Spec{Limit: l, Rate: 1, Shape: "zigzag", Duration: time.Minute, Keys: 1})
			return err
		}},
		{"aligned poisson", func() error {
			_, err := Custom(Spec{Limit: l, Rate: 1, Shape: "poisson", Duration: time.Minute, Keys: 1, Aligned: true})
			return err
		}},
		{"huge trace", func() error {
			_, err := Custom(Spec{Limit: l, Rate: 1e6, Shape: "steady", Duration: time.Hour, Keys: 100})
			return err
		}},
		{"no request at all", func() error {
			_, err := Custom(
				Spec{Limit: l, Rate: 1.0 / 3600, Shape: "poisson", Duration: time.Minute, Keys: 1, Seed: 1},
			)
			return err
		}},
		{"bad rate", func() error { _, err := ParseRate("fast"); return err }},
		{"bad rate period", func() error { _, err := ParseRate("3/fortnight"); return err }},
		{
			"bad trace time",
			func() error { _, err := ReadTrace(strings.NewReader("1 k\nyesterday\n"), "t", l); return err },
		},
		{"bad trace cost", func() error { _, err := ReadTrace(strings.NewReader("1 k -2\n"), "t", l); return err }},
		{"cost above limit", func() error { _, err := ReadTrace(strings.NewReader("1 k 11\n"), "t", l); return err }},
		{"empty trace", func() error { _, err := ReadTrace(strings.NewReader("# nothing\n"), "t", l); return err }},
	}
	for _, c := range cases {
		if err := c.err(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", c.name, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]float64{
		"150/min": 2.5, "2/s": 2, "2.5": 2.5, "2.5/s": 2.5, "36/h": 0.01, "10/10s": 1, "86400/day": 1,
	} {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q): got %v, %v; want %v", in, got, err, want)
		}
	}
}

// --rate is each key's average rate for every shape: bursts compress it
// into their on-periods.
func TestCustomRateIsTheAverageForEveryShape(t *testing.T) {
	const perMinute = 300.0
	for _, shape := range []string{"steady", "poisson", "bursts"} {
		t.Run(shape, func(t *testing.T) {
			spec := Spec{Limit: Limit{Count: 100, Window: time.Minute}, Rate: perMinute / 60, Shape: shape,
				On: 10 * time.Second, Off: 50 * time.Second, Duration: 10 * time.Minute, Keys: 20, Seed: 1}
			w, err := Custom(spec)
			if err != nil {
				t.Fatal(err)
			}
			got := float64(len(w.Requests)) / float64(spec.Keys) / spec.Duration.Minutes()
			if d := got/perMinute - 1; d < -0.02 || d > 0.02 {
				t.Fatalf("mean rate per key: got %.1f/min, want %.0f/min within 2%%", got, perMinute)
			}
		})
	}
}

// burstsOf splits one key's request times into bursts at the pauses.
func burstsOf(at []time.Duration, off time.Duration) [][]time.Duration {
	var bursts [][]time.Duration
	for i, t := range at {
		if i == 0 || t-at[i-1] > off/2 {
			bursts = append(bursts, nil)
		}
		bursts[len(bursts)-1] = append(bursts[len(bursts)-1], t)
	}
	return bursts
}

func requestsByKey(w *Workload) map[int32][]time.Duration {
	perKey := map[int32][]time.Duration{}
	for _, r := range w.Requests {
		perKey[r.Key] = append(perKey[r.Key], r.At)
	}
	return perKey
}

// Bursts compress the rate into their on-periods, and each key's start at
// an offset of its own, uniform over the period and the same for the same
// seed, so that some keys' bursts straddle a window boundary.
func TestCustomBurstsAreCompressedAndOffsetPerKey(t *testing.T) {
	spec := Spec{Limit: Limit{Count: 100, Window: time.Minute}, Rate: 5, Shape: "bursts",
		On: 10 * time.Second, Off: 50 * time.Second, Duration: 10 * time.Minute, Keys: 200, Seed: 1}
	w, err := Custom(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := "200 key(s), bursts: 300/min on average, 1800/min for 10s every 1m, each key from an offset of its own"
	if got := w.Description; got != want {
		t.Errorf("description: got %q, want %q", got, want)
	}
	period := spec.On + spec.Off
	// Each key's offset is where its bursts start in the period; a quarter
	// of the period holds about a quarter of the keys.
	quarters := make([]int, 4)
	straddles := 0
	for k, at := range requestsByKey(w) {
		bursts := burstsOf(at, spec.Off)
		for i, b := range bursts {
			if span := b[len(b)-1] - b[0]; span >= spec.On {
				t.Fatalf("key %d, burst %d lasts %v, longer than %v", k, i, span, spec.On)
			}
			cut := b[0] < spec.On || b[len(b)-1] > spec.Duration-spec.On
			if !cut && len(b) != 300 {
				t.Fatalf("key %d, burst %d at %v: %d requests, want 300", k, i, b[0], len(b))
			}
		}
		// The second burst is whole: its start is the key's offset.
		offset := bursts[1][0] % period
		quarters[offset*4/period]++
		if offset > period-spec.On {
			straddles++
		}
	}
	for q, n := range quarters {
		if n < 30 || n > 70 {
			t.Errorf("%d of 200 keys start their bursts in quarter %d of the period, want about 50: %v", n, q, quarters)
		}
	}
	if straddles == 0 {
		t.Errorf("no key's bursts straddle a minute boundary")
	}
	again, err := Custom(spec)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Requests, w.Requests) {
		t.Errorf("seed 1 gave two different traces")
	}
	spec.Seed = 2
	other, err := Custom(spec)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(other.Requests, w.Requests) {
		t.Errorf("seeds 1 and 2 gave the same trace")
	}
}

// Aligned bursts start at once for every key, on window boundaries when
// the period is a multiple of the window, also for a window that does not
// divide a day and so does not start at the trace's Start.
func TestCustomAlignedBurstsStartOnWindowBoundaries(t *testing.T) {
	for _, window := range []time.Duration{time.Minute, 7 * time.Minute} {
		spec := Spec{Limit: Limit{Count: 100, Window: window}, Rate: 1, Shape: "bursts", On: window / 4,
			Off: 2*window - window/4, Duration: 20 * window, Keys: 3, Seed: 1, Aligned: true}
		w, err := Custom(spec)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(w.Description, ", every key's at once, from a window boundary") {
			t.Errorf("window %v: description %q does not say the bursts are aligned", window, w.Description)
		}
		perKey := requestsByKey(w)
		for k, at := range perKey {
			if !reflect.DeepEqual(at, perKey[0]) {
				t.Fatalf("window %v: key %d's requests differ from key 0's: aligned bursts start at once", window, k)
			}
		}
		bursts := burstsOf(perKey[0], spec.Off)
		for _, b := range bursts[1:] {
			if since := w.Start.Add(b[0]).Sub(time.Unix(0, 0)); since%window != 0 {
				t.Errorf("window %v: a burst starts at %v, %v past a window boundary", window, b[0], since%window)
			}
		}
	}
}
