package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// withinEvery is the least time between two reports of progress inside a
// step.
var withinEvery = 2 * time.Second

// progress reports the steps of a long run on stderr: a live bar redrawn in
// place when the output is a terminal, otherwise one plain line per step;
// and, at most every withinEvery, how far a long step has got.
type progress struct {
	mu          sync.Mutex
	w           io.Writer
	live        bool
	start       time.Time
	drawn       bool
	done, total int
	reported    time.Time
}

func newProgress(w io.Writer, live bool) *progress {
	return &progress{w: w, live: live, start: time.Now(), reported: time.Now()}
}

func (p *progress) step(done, total int, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	p.reported = time.Now()
	p.draw(float64(done)/float64(total), fmt.Sprintf("%d/%d", done, total), what)
}

// within reports that the step what is frac done. Steps may run at once,
// so it is safe for concurrent use.
func (p *progress) within(what string, frac float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.reported) < withinEvery {
		return
	}
	p.reported = time.Now()
	// The total is known once the first step is done.
	count, share := fmt.Sprintf("%d/?", p.done), 0.0
	if p.total > 0 {
		count, share = fmt.Sprintf("%d/%d", p.done, p.total), (float64(p.done)+frac)/float64(p.total)
	}
	p.draw(share, count, fmt.Sprintf("%s: %.0f%% of its requests", what, 100*frac))
}

func (p *progress) draw(frac float64, count, what string) {
	if !p.live {
		fmt.Fprintf(p.w, "ratewise: [%s] %s\n", count, what)
		return
	}
	const width = 30
	filled := min(width, max(0, int(width*frac)))
	bar := strings.Repeat("#", filled) + strings.Repeat("-", width-filled)
	// \r and "erase line" redraw the status in place.
	fmt.Fprintf(p.w, "\r\x1b[K[%s] %s %s  %s", bar, count, time.Since(p.start).Round(time.Second), what)
	p.drawn = true
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
