package ratewiseotel_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetsAreExamples keeps README.md's Go code true: every line
// of each Go block must appear, in order, in example_test.go, whose
// examples compile and check their output.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme := read(t, "README.md")
	blocks := strings.Split(readme, "```go\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go blocks, want usage and the Redis clock", len(blocks))
	}
	examples := read(t, "example_test.go")
	for _, b := range blocks {
		b, _, _ = strings.Cut(b, "```")
		rest := examples
		for _, line := range strings.Split(b, "\n") {
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			j := strings.Index(rest, line)
			if j < 0 {
				t.Fatalf("a README Go block: line %q is not in example_test.go (in order)", line)
			}
			rest = rest[j+len(line):]
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
