package scripts

import (
	"context"
	"io/fs"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/algorithms"
)

// TestEveryDriverAssembles assembles every driver for every registered
// kind, and a set of all kinds, alone and batched: each script has the
// prelude first, the kind's step, each library it requires once, and its
// driver last.
func TestEveryDriverAssembles(t *testing.T) {
	drivers := []struct {
		name string
		get  func(*algorithms.Kind) (*redis.Script, error)
		file string
	}{
		{"decide", Decision, "decide.lua"},
		{"batch", Batch, "decide_batch.lua"},
		{"reserve", Reserve, "reserve.lua"},
		{"refund", Refund, "refund.lua"},
	}
	for _, k := range algorithms.Kinds() {
		for _, d := range drivers {
			t.Run(k.String()+"/"+d.name, func(t *testing.T) {
				sc, err := d.get(k)
				if err != nil {
					t.Fatal(err)
				}
				src := source(t, sc)
				checkOrder(t, src, "prelude.lua", k.String()+".lua", "once.lua", d.file)
				if again, _ := d.get(k); again != sc {
					t.Fatal("a second call assembled the script again")
				}
			})
		}
	}
	for _, d := range []struct {
		get  func([]*algorithms.Kind) (*redis.Script, error)
		file string
	}{{Set, "decide_set.lua"}, {SetBatch, "decide_set_batch.lua"}} {
		sc, err := d.get(algorithms.Kinds())
		if err != nil {
			t.Fatal(err)
		}
		src := source(t, sc)
		for _, k := range algorithms.Kinds() {
			checkOrder(t, src, "prelude.lua", k.String()+".lua", "once.lua", "set.lua", d.file)
		}
		if again, _ := d.get(algorithms.Kinds()); again != sc {
			t.Fatalf("a second call assembled %s again", d.file)
		}
	}
	alone, _ := Set(algorithms.Kinds())
	if batched, _ := SetBatch(algorithms.Kinds()); alone == batched {
		t.Fatal("Set and SetBatch returned one script")
	}
}

// source is the text of sc: go-redis keeps it only as the script to EVAL.
func source(t *testing.T, sc *redis.Script) string {
	t.Helper()
	var c recorder
	sc.Eval(t.Context(), &c, nil)
	return c.src
}

// checkOrder requires src to hold the files given, whole, in that order,
// and no file twice.
func checkOrder(t *testing.T, src string, want ...string) {
	t.Helper()
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := strings.Count(src, text(t, e.Name())); n > 1 {
			t.Fatalf("%s is included %d times", e.Name(), n)
		}
	}
	last := -1
	for _, f := range want {
		i := strings.Index(src, text(t, f))
		if i < 0 {
			t.Fatalf("%s is missing", f)
		}
		if i < last {
			t.Fatalf("%s comes before what precedes it", f)
		}
		last = i
	}
}

func text(t *testing.T, file string) string {
	t.Helper()
	b, err := files.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// recorder is a redis.Scripter that records the source of an EVAL.
type recorder struct {
	redis.Scripter
	src string
}

func (r *recorder) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	r.src = script
	return redis.NewCmd(ctx)
}

// TestLayout: the kinds whose state is one string moved from decimal text
// to binary fields (pack.lua, layout 2) and then to a value that may carry
// writers' records (rec.lua, layout 3), which their keys carry; the others
// have had one layout and name none, so their keys are unchanged; the
// calendar window's state came later, one string with records from its
// first layout. A step file that changes its state's layout must change
// this table and its version.
func TestLayout(t *testing.T) {
	want := map[string]string{"gcra": "3", "token_bucket": "3", "fixed_window": "3"}
	for _, k := range algorithms.Kinds() {
		if got := Layout(k); got != want[k.String()] {
			t.Errorf("Layout(%s) = %q, want %q", k.String(), got, want[k.String()])
		}
		if got, want := OneString(k), want[k.String()] != "" || k.String() == "calendar_window"; got != want {
			t.Errorf("OneString(%s) = %v, want %v", k.String(), got, want)
		}
	}
}
