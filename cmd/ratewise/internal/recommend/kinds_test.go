package recommend

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
)

// like returns a kind the registry does not have, named name, that fills r
// and configures as the registry's first kind of r does, and that kind.
func like(t *testing.T, name string, r role) (fresh, base kind) {
	t.Helper()
	i := slices.IndexFunc(registry, r.is)
	if i < 0 {
		t.Fatalf("no kind in the registry is %s", r.what)
	}
	fresh = registry[i]
	fresh.name = name
	return fresh, registry[i]
}

// A kind added to the registry is considered wherever its family and
// properties put it, with no change to recommend: registered after the
// kinds of its role, it is tried first, recommended, printed and listed.
func TestANewKindIsConsidered(t *testing.T) {
	exact := Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000}
	for _, c := range []struct {
		name  string
		r     role
		fresh string
		in    Input
		want  string
		// says is a phrase the output must contain.
		says string
	}{
		{"an exact log", exactLog, "ring_log", exact, "ring_log", "ring_log decides exactly as sliding_log (60 KB " +
			"per key), in 5 KB per key"},
		{"an exact log with a burst", exactLog, "ring_log",
			Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000, Burst: 20},
			"ring_log + gcra", "with gcra (6,000 per 1m, burst 20) beside it"},
		{"a bucket", bucket, "ring_bucket",
			Input{QPS: 50, Window: time.Second, Precision: "approx", Keys: 1000, Burst: 20}, "ring_bucket",
			"token_bucket, gcra and ring_bucket with a burst of 20"},
		{"a bucket beside an exact log", bucket, "ring_bucket",
			Input{QPS: 100, Window: time.Minute, Precision: "exact", Keys: 1000, Burst: 20},
			"sliding_log + ring_bucket", "ring_bucket adds 5 KB per key"},
		{"a counter", counter, "ring_counter",
			Input{QPS: 100, Window: time.Minute, Precision: "approx", Keys: 1000},
			"ring_counter", "the sliding window counter keeps the window's meaning"},
		{"a calendar window", calendar, "ring_calendar",
			Input{QPS: 10000.0 / 86400, Window: 24 * time.Hour, Calendar: Day, Keys: 1000},
			"ring_calendar", "resets at the first instant of each UTC day"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.MemoryBudget, c.in.LatencyBudget = 1e9, time.Millisecond
			if err := c.in.Validate(); err != nil {
				t.Fatal(err)
			}
			fresh, base := like(t, c.fresh, c.r)
			cat := append(slices.Clone(registry), fresh)
			figs := figures(60e3)
			f := figs[base.name]
			f.Algorithm, f.BytesPerKey = fresh.name, 5e3
			figs[fresh.name] = f
			d, err := cat.choose(c.in, figs)
			if err != nil {
				t.Fatal(err)
			}
			if d.Algorithm != c.want {
				t.Fatalf("got %s, want %s; rejected: %q", d.Algorithm, c.want, d.Rejected)
			}
			if d.Config == "" || strings.Contains(d.Config, "/*") {
				t.Fatalf("no Go code for %s: %q", d.Algorithm, d.Config)
			}
			var out bytes.Buffer
			m := &Measurements{
				Figures:       figs,
				Store:         "memory",
				Records:       c.in.Limit(),
				Measured:      c.in.Limit(),
				AccuracyLimit: c.in.Limit(),
			}
			cat.write(&out, c.in, m, d, nil, "the in-memory store")
			for _, want := range []string{"Recommendation: " + c.want + ",", "\n" + fresh.name + " ", c.says} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the output does not say %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// A kind of a family no rule knows is measured and listed, and never
// recommended: the rules would have to say what question it answers.
func TestAKindOfANewFamilyIsListedNotRecommended(t *testing.T) {
	fresh, _ := like(t, "stranger", bucket)
	fresh.family = algo.Family(99)
	cat := append(slices.Clone(registry), fresh)
	figs := figures(60e3)
	f := figs["gcra"]
	f.Algorithm, f.BytesPerKey = fresh.name, 1
	figs[fresh.name] = f
	in := Input{
		QPS:           50,
		Window:        time.Second,
		Precision:     "approx",
		Keys:          1000,
		Burst:         20,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	d, err := cat.choose(in, figs)
	if err != nil {
		t.Fatal(err)
	}
	if d.Algorithm != "gcra" {
		t.Fatalf("got %s, want gcra", d.Algorithm)
	}
	var out bytes.Buffer
	cat.write(
		&out,
		in,
		&Measurements{
			Figures:       figs,
			Store:         "memory",
			Records:       in.Limit(),
			Measured:      in.Limit(),
			AccuracyLimit: in.Limit(),
		},
		d,
		nil,
		"",
	)
	if !strings.Contains(out.String(), "\nstranger ") {
		t.Fatalf("stranger is not in the table:\n%s", out.String())
	}
}

// Every kind in the registry answers some question: a kind whose family and
// properties fill no role would be measured but never recommended.
func TestEveryKindIsACandidate(t *testing.T) {
	figs := map[string]Figures{}
	for _, k := range registry {
		figs[k.name] = Figures{Algorithm: k.name}
	}
	considered := map[string]bool{}
	for _, in := range []Input{
		{QPS: 1, Window: 24 * time.Hour, Calendar: Day, Keys: 1},
		{QPS: 1, Window: MonthWindow, Calendar: Month, Keys: 1},
		{QPS: 10, Window: time.Minute, Precision: "exact", Keys: 1, Burst: 5},
		{QPS: 10, Window: time.Minute, Precision: "approx", Keys: 1, Burst: 5},
		{QPS: 10, Window: time.Minute, Precision: "approx", Keys: 1},
	} {
		for _, c := range registry.candidates(in, figs) {
			for _, k := range c.kinds {
				considered[k.name] = true
			}
		}
	}
	for _, k := range registry {
		if !considered[k.name] {
			t.Errorf("no rule considers %s: its family and properties fill no role (see roles in kinds.go)", k.name)
		}
	}
}

// Decide needs figures for a kind of every role, and says which.
func TestDecideNeedsEveryRole(t *testing.T) {
	figs := figures(1e3)
	delete(figs, "sliding_window")
	in := Input{
		QPS:           100,
		Window:        time.Minute,
		Precision:     "approx",
		Keys:          1,
		MemoryBudget:  1e9,
		LatencyBudget: time.Millisecond,
	}
	if _, err := Choose(in, figs); err == nil ||
		!strings.Contains(err.Error(), "no figures for a sliding window counter (sliding_window)") {
		t.Fatalf("got %v, want an error naming the sliding window counter", err)
	}
}

// recommend's code names no algorithm: not by its registry name in a string,
// nor by its type. The rules read what the registry says of each kind.
func TestSourceNamesNoAlgorithm(t *testing.T) {
	var names, types []string
	for _, k := range algorithms.Kinds() {
		names = append(names, k.String())
		alg, err := algo.Nominal(k, 10, time.Second, 2)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, reflect.TypeOf(alg).Name())
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0) // comments left out
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					break
				}
				s, _ := strconv.Unquote(n.Value)
				for _, word := range strings.FieldsFunc(s, func(r rune) bool { return r != '_' && !('a' <= r && r <= 'z') }) {
					if slices.Contains(names, word) {
						t.Errorf("%s: names the algorithm %q", fset.Position(n.Pos()), word)
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "algorithms" && slices.Contains(types, n.Sel.Name) {
					t.Errorf("%s: names the type algorithms.%s", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
}
