package assemble_test

import (
	"testing"
	"testing/fstest"

	"github.com/ratewise/ratewise/internal/assemble"
)

// TestRequiresOnceAndInstances: a file comes after what it requires, each
// file once however many require it, and a template comes after each file
// that is an instance of it, under that file's name.
func TestRequiresOnceAndInstances(t *testing.T) {
	fsys := fstest.MapFS{
		"lib.sql":  {Data: []byte("lib")},
		"tmpl.sql": {Data: []byte("-- requires: lib.sql\nf___kind__")},
		"a.sql":    {Data: []byte("-- requires: lib.sql\n-- instance of: tmpl.sql")},
		"b.sql":    {Data: []byte("-- instance of: tmpl.sql")},
	}
	a := assemble.New(fsys)
	for _, f := range []string{"a.sql", "b.sql", "a.sql"} {
		if err := a.Include(f); err != nil {
			t.Fatal(err)
		}
	}
	want := "lib\n-- requires: lib.sql\n-- instance of: tmpl.sql\n-- requires: lib.sql\nf_a\n-- instance of: " +
		"tmpl.sql\n-- requires: lib.sql\nf_b\n"
	if got := a.String(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if err := assemble.New(fsys).Include("missing.sql"); err == nil {
		t.Fatal("a missing file assembled")
	}
}
