package report

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Table is rows of cells, rendered aligned or as Markdown.
type Table struct {
	Header []string
	Rows   [][]string
	Left   int // how many leading columns are text, aligned left
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Write renders the table aligned for a terminal, or as Markdown.
func (t *Table) Write(w io.Writer, markdown bool) {
	if markdown {
		fmt.Fprintf(w, "| %s |\n", strings.Join(t.Header, " | "))
		seps := make([]string, len(t.Header))
		for i := range seps {
			seps[i] = "---"
			if i > 0 {
				seps[i] = "---:"
			}
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(seps, " | "))
		for _, r := range t.Rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		fmt.Fprintln(w)
		return
	}
	// Text columns read left-aligned, numbers right-aligned.
	widths := make([]int, len(t.Header))
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range append([][]string{t.Header}, t.Rows...) {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if i < t.Left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
	fmt.Fprintln(w)
}

// lineWidth is the width the notes under a table are wrapped to, so that
// they read on a terminal of 120 columns, as wide as a table with one Redis.
const lineWidth = 120

// writeWrapped writes text after prefix, wrapped at word boundaries to
// lineWidth, continuation lines indented as far as prefix.
func writeWrapped(w io.Writer, prefix, text string) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line := prefix
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) > lineWidth {
			fmt.Fprintln(w, line)
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	fmt.Fprintln(w, line)
}
