package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// A trace lasts from its first request to its last, plus less than a
// window: its Start is the window boundary before its first request, not
// the start of that request's day. Its instants are its own, so a fixed
// window decides on the replayed trace as it would on the recorded times.
func TestReadTraceLastsItsSpan(t *testing.T) {
	l := Limit{Count: 20, Window: time.Minute}
	first := time.Date(2026, 6, 1, 20, 36, 39, 725305000, time.UTC)
	const span = 10 * time.Minute
	var in strings.Builder
	var at []time.Time
	keys := []string{"alice", "bob", "carol"}
	for i := 0; ; i++ {
		t := first.Add(time.Duration(i) * 600 * time.Millisecond)
		if t.Sub(first) > span {
			break
		}
		at = append(at, t)
		fmt.Fprintf(&in, "%s %s\n", t.Format(time.RFC3339Nano), keys[i%len(keys)])
	}
	if last := at[len(at)-1]; last.Sub(first) != span {
		t.Fatalf("the test's trace spans %v, want %v", last.Sub(first), span)
	}
	w, err := ReadTrace(strings.NewReader(in.String()), "ten-minutes.log", l)
	if err != nil {
		t.Fatal(err)
	}
	if w.Duration != span+time.Microsecond {
		t.Errorf("Duration: got %v, want the span %v and a microsecond", w.Duration, span)
	}
	if !w.Start.Equal(first) {
		t.Errorf("Start: got %v, want the first request's instant %v", w.Start, first)
	}
	if !strings.Contains(w.Description, "over 10m0s") {
		t.Errorf("description %q does not say the trace spans 10m0s", w.Description)
	}

	alg := algorithms.FixedWindow{Limit: l.Count, Window: l.Window}
	decide := func(states map[string]algo.State, key string, now time.Time) bool {
		st, res := algo.Decide(alg, states[key], now, 1)
		states[key] = st
		return res.Allowed
	}
	recorded, replayed := map[string]algo.State{}, map[string]algo.State{}
	denied := 0
	for i, r := range w.Requests {
		want := decide(recorded, keys[i%len(keys)], at[i])
		if got := decide(replayed, w.Keys[r.Key], w.Start.Add(r.At)); got != want {
			t.Fatalf("request %d at %v: admitted=%v replayed, %v at the recorded time", i, at[i], got, want)
		}
		if !want {
			denied++
		}
	}
	// Each key sends 33 requests a minute against a limit of 20.
	if denied == 0 {
		t.Fatal("the fixed window denied nothing: the test checks nothing")
	}
}
