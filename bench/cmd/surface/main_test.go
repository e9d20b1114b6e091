package main

import (
	"os"
	"path/filepath"
	"testing"
)

// fixture exports a known number of each kind of identifier. It is
// written to a temporary directory by the test, so that the repository
// itself exports none of its names.
const fixture = `// Package fixture exports a known number of each kind of identifier for
// surface's test.
package fixture

import "io"

// Two constants, one unexported.
const (
	A, B = 1, 2
	c    = 3
)

// One variable of its own type (counted with the type).
var ErrX = T{}

// F is a function.
func F() {}

// T has two exported fields, one embedded, and one unexported.
type T struct {
	X, Y int
	io.Reader
	z int
}

// NewT is counted as a function.
func NewT() T { return T{} }

// M is a method; m is not.
func (T) M() {}
func (T) m() {}

// I has one exported method.
type I interface {
	Do()
	do()
}

type hidden struct{ A int }

// Hidden's exported method on an unexported type is not listed.
func (hidden) H() {}
`

func TestCountDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fixture.go"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	c, ok, err := countDir(dir)
	if err != nil || !ok {
		t.Fatalf("countDir: %v, %v", ok, err)
	}
	want := count{consts: 2, vars: 1, funcs: 2, types: 2, methods: 1, fields: 4}
	if c != want {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

// -check fails once the core or all public packages pass their budget,
// and holds at it.
func TestReportChecksTheBudgets(t *testing.T) {
	for _, tt := range []struct {
		name   string
		counts map[string]count
		ok     bool
	}{
		{"at both budgets", map[string]count{".": {funcs: coreBudget}, "httplimit": {funcs: allBudget - coreBudget}}, true},
		{"core over", map[string]count{".": {funcs: coreBudget + 1}}, false},
		{"all over", map[string]count{".": {funcs: 1}, "httplimit": {funcs: allBudget}}, false},
	} {
		if got := report(tt.counts, true); got != tt.ok {
			t.Errorf("%s: report = %v, want %v", tt.name, got, tt.ok)
		}
	}
}
