package ratewise_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeQuickstartIsTheExample keeps README.md's quickstart a copy of
// Example, which compiles and whose output go test checks: every line of the
// README's first Go block must appear, in order, in example_test.go.
func TestReadmeQuickstartIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "```go\n")
	if !ok {
		t.Fatal("README.md has no Go block")
	}
	block, _, _ = strings.Cut(block, "```")
	rest := string(example)
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		i := strings.Index(rest, line)
		if i < 0 {
			t.Fatalf("README quickstart line %q is not in example_test.go (in order)", line)
		}
		rest = rest[i+len(line):]
	}
}
