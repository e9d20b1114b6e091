package ratewise_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeSnippetsAreExamples keeps README.md's Go code compiling and its
// output true. The quickstart is examples/quickstart/main.go verbatim (go vet
// builds it), preceded by the go get line and followed by the output its
// testable example checks. Every line of every later Go block must appear,
// in order, in example_test.go, whose examples go test runs.
func TestReadmeSnippetsAreExamples(t *testing.T) {
	readme := read(t, "README.md")
	blocks := strings.Split(readme, "```go\n")[1:]
	if len(blocks) < 1 {
		t.Fatal("README.md has no Go block, want the quickstart")
	}
	quickstart, after, _ := strings.Cut(blocks[0], "```")
	if want := read(t, "examples/quickstart/main.go"); quickstart != want {
		t.Fatalf("README's quickstart is not examples/quickstart/main.go verbatim:\n%s", quickstart)
	}
	if before, _, _ := strings.Cut(readme, "```go\n"); !strings.Contains(
		before[strings.LastIndex(before, "## "):],
		"go get github.com/ratewise/ratewise\n",
	) {
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
	for _, b := range blocks[1:] {
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

// TestReadmeCitesAlgorithmsDocSections: the README points to the rules of
// the algorithms package doc by their headings rather than restating them,
// so each heading it names must still be one there.
func TestReadmeCitesAlgorithmsDocSections(t *testing.T) {
	readme := read(t, "README.md")
	doc := read(t, "algorithms/doc.go")
	for _, section := range []string{"Resolution and range", "Time that runs backwards", "Changing limits", "Refunds"} {
		if !strings.Contains(readme, `"`+section+`"`) {
			t.Errorf("README.md no longer cites %q: drop it from this list", section)
		}
		if !strings.Contains(doc, "// # "+section+"\n") {
			t.Errorf("README.md cites %q, which algorithms/doc.go has no heading for", section)
		}
	}
}

// TestDocLinksResolve: each fact lives in one document and the others link
// to it, so every relative link in README.md and docs/*.md must name a file
// that exists, and every #fragment a heading of the Markdown file it points
// into.
func TestDocLinksResolve(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "README.md")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, file := range files {
		for _, m := range link.FindAllStringSubmatch(prose(read(t, file)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, fragment, _ := strings.Cut(target, "#")
			if path == "" {
				path = file
			} else {
				path = filepath.Join(filepath.Dir(file), path)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", file, target)
				continue
			}
			if fragment != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(read(t, path)), fragment) {
				t.Errorf("%s links to %s, but %s has no heading #%s", file, target, path, fragment)
			}
		}
	}
}

// prose is Markdown text without its fenced code blocks.
func prose(text string) string {
	var b strings.Builder
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// anchors are the fragments GitHub gives the headings of a Markdown
// document: lower case, without punctuation but hyphens and underscores,
// spaces as hyphens.
func anchors(text string) []string {
	var out []string
	for _, line := range strings.Split(prose(text), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
