package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/recommend"
	"github.com/ratewise/ratewise/replay"
)

// The recommendation names the classic decision tree's pick, says in a
// phrase what that tree is, and lists where the measurements disagree with
// the classic thresholds, on synthetic figures so that nothing is measured.
func TestRecommendationStatesTheClassicTree(t *testing.T) {
	in := recommend.Input{QPS: 5000, Window: time.Minute, Precision: "exact", Keys: 10, MemoryBudget: 1e9, LatencyBudget: time.Millisecond}
	m := &recommend.Measurements{Figures: map[string]recommend.Figures{}, Records: in.Limit(), Measured: in.Limit(),
		AccuracyLimit: in.Limit(), Workloads: []string{"poisson", "boundary"}}
	for _, name := range replay.AlgorithmNames {
		bytes := 200.0
		if name == "sliding_log" {
			bytes = 3e6
		}
		m.Figures[name] = recommend.Figures{Algorithm: name, BytesPerKey: bytes, Store: "memory", P50: time.Microsecond / 2, P99: time.Microsecond,
			Overshoot: map[string]float64{"poisson": 1, "boundary": 1}}
	}
	d, err := recommend.Decide(in, m.Figures)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	writeRecommendation(&out, in, m, d)
	got := out.String()
	for _, want := range []string{
		"The classic decision tree (" + recommend.ClassicTree + ") picks sliding_log.\n",
		"Where this machine's measurements disagree with the classic thresholds:\n",
		"- the classic thresholds rule the sorted set out above QPS 1,000 with a window over 10s;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the recommendation does not say %q:\n%s", want, got)
		}
	}
	if strings.Contains(strings.ToLower(got), "note") {
		t.Errorf("the recommendation refers to notes the user cannot read:\n%s", got)
	}
}
