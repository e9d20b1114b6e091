package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress reports the steps of a long run on stderr: a live bar redrawn in
// place when the output is a terminal, otherwise one plain line per step.
type progress struct {
	w     io.Writer
	live  bool
	start time.Time
	drawn bool
}

func newProgress(w io.Writer, live bool) *progress {
	return &progress{w: w, live: live, start: time.Now()}
}

func (p *progress) step(done, total int, what string) {
	if !p.live {
		fmt.Fprintf(p.w, "ratewise: [%d/%d] %s\n", done, total, what)
		return
	}
	const width = 30
	filled := width * done / total
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	// \r and "erase line" redraw the status in place.
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %d/%d %s  %s", bar, done, total, time.Since(p.start).Round(time.Second), what)
	p.drawn = true
}

func (p *progress) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
