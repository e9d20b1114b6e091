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
// order, in storeredis/example_test.go (whose newLimiter it is, imports
// included, so that it compiles as pasted), and of every later one in
// example_test.go.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme := read(t, "README.md")
	blocks := strings.Split(readme, "```go\n")[1:]
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go blocks, want the quickstart, the Redis store and examples", len(blocks))
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

	// The Redis block compiles as pasted: a file of its own, imports and all.
	if !strings.HasPrefix(blocks[1], "import (\n") {
		t.Fatal("README's Redis block does not start with its imports")
	}
	inOrder(t, blocks[1], "storeredis/example_test.go")
	for _, b := range blocks[2:] {
		inOrder(t, b, "example_test.go")
	}
}

// inOrder fails unless every line of the Go block that starts block
// appears, in order, in the file at path.
func inOrder(t *testing.T, block, path string) {
	t.Helper()
	block, _, _ = strings.Cut(block, "```")
	rest := read(t, path)
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		j := strings.Index(rest, line)
		if j < 0 {
			t.Fatalf("a README Go block: line %q is not in %s (in order)", line, path)
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

// TestReadmePromisesQuoteTheirRules: the README's promises on changed
// limits, refunds and retried writes are the rules themselves, word for
// word, as the algorithms package doc ("Changing limits", "Refunds") and
// docs/redis.md ("Retries and request IDs") state them, so that the three
// never drift apart. Comment markers, Markdown emphasis and code quotes,
// and line breaks are not words.
func TestReadmePromisesQuoteTheirRules(t *testing.T) {
	readme := words(read(t, "README.md"))
	doc := read(t, "algorithms/doc.go")
	redis := read(t, "docs/redis.md")
	for _, rule := range []struct{ name, text string }{
		{"algorithms: Changing limits", paragraph(t, doc, "// # Changing limits\n")},
		{"algorithms: Refunds", paragraph(t, doc, "// # Refunds\n")},
		{"docs/redis.md: Retries and request IDs", strings.SplitN(paragraph(t, redis, "### Retries and request IDs\n"), "**", 3)[1]},
	} {
		if w := words(rule.text); len(w) < 100 || !strings.Contains(readme, w) {
			t.Errorf("README.md does not quote the rule of %s word for word:\n%s", rule.name, w)
		}
	}
}

// paragraph returns the first paragraph after heading in text, Markdown or
// a Go comment, without the comment's markers.
func paragraph(t *testing.T, text, heading string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, heading)
	if !ok {
		t.Fatalf("no %q", heading)
	}
	comment := strings.HasPrefix(heading, "//")
	var lines []string
	for _, line := range strings.Split(after, "\n") {
		if comment {
			if !strings.HasPrefix(line, "//") {
				break
			}
			line = strings.TrimPrefix(strings.TrimPrefix(line, "//"), " ")
		}
		if strings.TrimSpace(line) == "" {
			if len(lines) > 0 {
				break
			}
			continue
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// words is text with only its words: no comment markers, emphasis or code
// quotes, and single spaces.
func words(text string) string {
	text = strings.NewReplacer("**", "", "`", "").Replace(text)
	return strings.Join(strings.Fields(text), " ")
}
