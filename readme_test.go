package ratewise_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeSnippetsAreExamples keeps README.md's Go code compiling and its
// output true. The quickstart is examples/quickstart/main.go verbatim (go vet
// builds it), preceded by the go get line and followed by the output its
// testable example checks. Every line of the second Go block must appear, in
// order, in storeredis/example_test.go.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme := read(t, "README.md")
	blocks := strings.Split(readme, "```go\n")[1:]
	if len(blocks) != 2 {
		t.Fatalf("README.md has %d Go blocks, want 2: the quickstart and the Redis store", len(blocks))
	}
	quickstart, after, _ := strings.Cut(blocks[0], "```")
	if want := read(t, "examples/quickstart/main.go"); quickstart != want {
		t.Fatalf("README's quickstart is not examples/quickstart/main.go verbatim:\n%s", quickstart)
	}
	if before, _, _ := strings.Cut(readme, "```go\n"); !strings.Contains(before[strings.LastIndex(before, "## "):], "go get github.com/ratewise/ratewise\n") {
		t.Fatal("README's quickstart section does not start with go get github.com/ratewise/ratewise")
	}
	_, output, _ := strings.Cut(after, "```text\n")
	output, _, _ = strings.Cut(output, "```")
	_, want, _ := strings.Cut(read(t, "examples/quickstart/main_test.go"), "// Output:\n")
	var lines []string
	for _, l := range strings.Split(want, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "// ") {
			lines = append(lines, strings.TrimPrefix(l, "// "))
		}
	}
	if got := strings.TrimSpace(output); got == "" || got != strings.Join(lines, "\n") {
		t.Fatalf("README's quickstart output:\n%s\nwant the example's:\n%s", got, strings.Join(lines, "\n"))
	}

	block, _, _ := strings.Cut(blocks[1], "```")
	rest := read(t, "storeredis/example_test.go")
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		j := strings.Index(rest, line)
		if j < 0 {
			t.Fatalf("README's Redis block: line %q is not in storeredis/example_test.go (in order)", line)
		}
		rest = rest[j+len(line):]
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
