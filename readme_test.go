package ratewise_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetsAreExamples keeps README.md's Go blocks copies of
// testable examples, which compile and whose output go test checks: every
// line of the N-th Go block must appear, in order, in its example file.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(readme), "```go\n")[1:]
	examples := []string{"example_test.go", "storeredis/example_test.go"}
	if len(blocks) != len(examples) {
		t.Fatalf("README.md has %d Go blocks, want %d (one per example file)", len(blocks), len(examples))
	}
	for i, file := range examples {
		example, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		block, _, _ := strings.Cut(blocks[i], "```")
		rest := string(example)
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			j := strings.Index(rest, line)
			if j < 0 {
				t.Fatalf("README Go block %d: line %q is not in %s (in order)", i+1, line, file)
			}
			rest = rest[j+len(line):]
		}
	}
}
