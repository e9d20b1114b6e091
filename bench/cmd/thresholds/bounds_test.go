package main

import (
	"os"
	"path/filepath"
	"testing"
)

const doc = `# Benchmarks

| benchmark | ns/op |
| --- | --- |
| ` + "`alg=gcra/store=memory`" + ` | 140 |

## Bounds that -check enforces

| bound | op | value | why |
| --- | --- | --- | --- |
| ` + "`gcra.bytes_per_key`" + ` | <= | 80 | measured 72 |
| ` + "`round_trips_per_decision`" + ` | <= | 1 | one EVALSHA |
| ` + "`x.decisions_per_second`" + ` | >= | 1,000 | a floor |

## After

| ` + "`not.a.bound`" + ` | nonsense |
`

func TestReadBoundsOnlyFromTheBoundsSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	bounds, err := readBounds(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []bound{
		{"gcra.bytes_per_key", "<=", 80},
		{"round_trips_per_decision", "<=", 1},
		{"x.decisions_per_second", ">=", 1000},
	}
	if len(bounds) != len(want) {
		t.Fatalf("got %v, want %v", bounds, want)
	}
	for i := range want {
		if bounds[i] != want[i] {
			t.Fatalf("bound %d: got %v, want %v", i, bounds[i], want[i])
		}
	}
}

func TestCheckBounds(t *testing.T) {
	bounds := []bound{{"a", "<=", 80}, {"b", ">=", 10}}
	tests := []struct {
		name  string
		m     measured
		quick bool
		want  bool
	}{
		{"all hold", measured{"a": 72, "b": 10}, false, true},
		{"above a ceiling", measured{"a": 81, "b": 10}, false, false},
		{"below a floor", measured{"a": 72, "b": 9}, false, false},
		{"missing in a full run", measured{"a": 72}, false, false},
		{"missing in -quick", measured{"a": 72}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := checkBounds(bounds, tt.m, tt.quick); got != tt.want {
				t.Fatalf("checkBounds = %v, want %v", got, tt.want)
			}
		})
	}
}
