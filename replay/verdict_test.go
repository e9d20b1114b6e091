package replay

import (
	"encoding/json"
	"strings"
	"testing"
)

func ptr(v float64) *float64 { return &v }

// row is an algorithm's figures on one workload: its overshoot and false
// denials, then per target its memory and commands (nil: not measured).
func row(alg string, overshoot float64, falseDenials int64, stores ...StoreFigures) Row {
	return Row{
		Workload:  "w",
		Algorithm: alg,
		Params:    "100/1m",
		Accuracy:  Accuracy{Overshoot: overshoot, FalseDenials: falseDenials},
		Stores:    stores,
	}
}

func on(target string, bytes, cmds *float64) StoreFigures {
	return StoreFigures{Target: target, BytesPerKey: bytes, CommandsPerDecision: cmds}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		name    string
		targets []string
		rows    []Row
		// want: the choice, whether it held, the cheaper algorithm ("" for
		// none), and the stores cost was taken from.
		choice, cheaper   string
		held              bool
		bytesAt, cmdsAt   string
		text, cheaperText string
	}{
		{
			name:    "memory within 2% is one cost; commands then decide; cheaper named",
			targets: []string{"memory", "miniredis"},
			rows: []Row{
				row("fixed_window", 2, 0, on("memory", ptr(63.2), nil), on("miniredis", nil, ptr(1.67))),
				row("sliding_log", 1, 0, on("memory", ptr(3000), nil), on("miniredis", nil, ptr(7.8))),
				row("token_bucket", 1, 0, on("memory", ptr(63.3), nil), on("miniredis", nil, ptr(1.8))),
				row("gcra", 1, 0, on("memory", ptr(63.6), nil), on("miniredis", nil, ptr(1.8))),
			},
			choice: "gcra", held: true, cheaper: "fixed_window", bytesAt: "memory", cmdsAt: "miniredis",
			text:        "gcra held the limit (max 1.00×) at the least cost (64 B/key on memory, 1.80 cmds on miniredis).",
			cheaperText: "fixed_window is cheaper (63 B/key, 1.67 cmds) but reached 2.00× the limit.",
		},
		{
			name:    "redis's memory outranks the memory store's",
			targets: []string{"memory", "redis"},
			rows: []Row{
				row("fixed_window", 2, 0, on("memory", ptr(63), nil), on("redis", ptr(56), ptr(2))),
				row("token_bucket", 1, 0, on("memory", ptr(63), nil), on("redis", ptr(72), ptr(2))),
				row("sliding_window", 1, 0, on("memory", ptr(900), nil), on("redis", ptr(64), ptr(2))),
			},
			choice: "sliding_window", held: true, cheaper: "fixed_window", bytesAt: "redis", cmdsAt: "redis",
		},
		{
			name:    "fewer false denials, then the name, break ties; a tie is not cheaper",
			targets: []string{"memory"},
			rows: []Row{
				row("fixed_window", 2, 0, on("memory", ptr(63), nil)),
				row("token_bucket", 1, 3, on("memory", ptr(63), nil)),
				row("gcra", 1, 3, on("memory", ptr(63), nil)),
				row("sliding_log", 1, 0, on("memory", ptr(3000), nil)),
			},
			choice: "gcra", held: true, bytesAt: "memory",
		},
		{
			name:    "none held: the closest, and the cheapest",
			targets: []string{"memory"},
			rows: []Row{
				row("fixed_window", 2, 0, on("memory", ptr(63), nil)),
				row("sliding_window", 1.1, 0, on("memory", ptr(900), nil)),
				row("gcra", 1.5, 0, on("memory", ptr(63), nil)),
			},
			choice: "sliding_window", held: false, cheaper: "fixed_window", bytesAt: "memory",
			text:        "No algorithm held the limit; sliding_window came closest, at 1.10× (900 B/key on memory).",
			cheaperText: "fixed_window is the cheapest (63 B/key) but reached 2.00× the limit.",
		},
		{
			name:    "nothing measured: false denials and names decide",
			targets: []string{"custom"},
			rows: []Row{
				row("sliding_log", 1, 0, on("custom", nil, nil)),
				row("fixed_window", 1, 0, on("custom", nil, nil)),
			},
			choice: "fixed_window", held: true,
			text: "fixed_window held the limit (max 1.00×) at the least cost.",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judge("w", c.rows, c.targets)
			if v.Choice.Algorithm != c.choice || v.Held != c.held {
				t.Errorf("choice: got %s (held %v), want %s (held %v)", v.Choice.Algorithm, v.Held, c.choice, c.held)
			}
			cheaper := ""
			if v.Cheaper != nil {
				cheaper = v.Cheaper.Algorithm
			}
			if cheaper != c.cheaper {
				t.Errorf("cheaper: got %q, want %q", cheaper, c.cheaper)
			}
			if v.BytesStore != c.bytesAt || v.CommandsStore != c.cmdsAt {
				t.Errorf(
					"cost from: got memory on %q, commands on %q; want %q, %q",
					v.BytesStore,
					v.CommandsStore,
					c.bytesAt,
					c.cmdsAt,
				)
			}
			if c.text != "" && v.Text != c.text {
				t.Errorf("text:\ngot  %q\nwant %q", v.Text, c.text)
			}
			// With no cheaper algorithm there is no second sentence.
			if (c.cheaperText != "" || c.cheaper == "") && v.CheaperText != c.cheaperText {
				t.Errorf("cheaper text:\ngot  %q\nwant %q", v.CheaperText, c.cheaperText)
			}
		})
	}
}

// Compare puts a verdict per workload in its report, and JSON carries it:
// on the window-boundary attack the fixed window is cheap but admits twice
// the limit, so it is named as cheaper, not chosen.
func TestCompareReportsVerdicts(t *testing.T) {
	_, rep := boundaryReport(t)
	if len(rep.Verdicts) != 1 {
		t.Fatalf("verdicts: got %d, want 1", len(rep.Verdicts))
	}
	v := rep.Verdicts[0]
	if !v.Held || v.Choice.Overshoot > 1 || v.Choice.Algorithm == "fixed_window" {
		t.Errorf("verdict on the boundary attack: %+v", v)
	}
	if v.BytesStore != "memory" || v.CommandsStore != "miniredis" {
		t.Errorf("cost from memory on %q and commands on %q, want memory and miniredis", v.BytesStore, v.CommandsStore)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"verdicts":[{"workload":"boundary","held":true`) {
		t.Errorf("JSON carries no verdict: %.300s", b)
	}
}
