package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The charts are plain SVG written here, so the docs need no plotting tool.

type series struct {
	name   string
	colour string
	dashed bool
	points [][2]float64 // x, y
}

type chart struct {
	title, xLabel, yLabel string
	logY                  bool
	series                []series
}

func writeCharts(dir string, mem []memoryRow, lat []latencyRow) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	memory := chart{title: "Redis memory per key against QPS × window", xLabel: "records in the window (QPS × window)", yLabel: "bytes per key", logY: true}
	log := series{name: "sliding log (measured)", colour: "#d62728"}
	notes := series{name: "notes' estimate (100 B per record)", colour: "#d62728", dashed: true}
	window := series{name: "sliding window counter, 60 sub-windows", colour: "#1f77b4"}
	bucket := series{name: "token bucket", colour: "#2ca02c"}
	gcra := series{name: "GCRA", colour: "#9467bd", dashed: true}
	for _, r := range mem {
		x := float64(r.records())
		if r.measuredLog {
			log.points = append(log.points, [2]float64{x, float64(r.logBytes)})
		}
		notes.points = append(notes.points, [2]float64{x, x * 100})
		window.points = append(window.points, [2]float64{x, float64(r.windowBytes)})
		bucket.points = append(bucket.points, [2]float64{x, float64(r.bucketBytes)})
		gcra.points = append(gcra.points, [2]float64{x, float64(r.gcraBytes)})
	}
	memory.series = []series{notes, log, window, bucket, gcra}

	latency := chart{title: "Sliding-log decision latency against records N", xLabel: "records N in the log", yLabel: "µs per decision"}
	server := series{name: "Redis server time", colour: "#1f77b4"}
	p50 := series{name: "client p50", colour: "#2ca02c"}
	p99 := series{name: "client p99", colour: "#d62728"}
	for _, r := range lat {
		x := float64(r.n)
		server.points = append(server.points, [2]float64{x, r.serverMicros})
		p50.points = append(p50.points, [2]float64{x, float64(r.p50.Microseconds())})
		p99.points = append(p99.points, [2]float64{x, float64(r.p99.Microseconds())})
	}
	latency.series = []series{server, p50, p99}

	for name, c := range map[string]chart{"memory.svg": memory, "latency.svg": latency} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c.svg()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// svg renders the chart with a logarithmic x axis.
func (c chart) svg() string {
	const w, h, left, right, top, bottom = 840, 420, 80, 310, 40, 60
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		for _, p := range s.points {
			minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
			minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
		}
	}
	lx := func(v float64) float64 { return math.Log10(v) }
	x0, x1 := math.Floor(lx(minX)), math.Ceil(lx(maxX))
	ty := func(v float64) float64 { return v }
	y0, y1 := 0.0, niceCeil(maxY)
	if c.logY {
		ty = func(v float64) float64 { return math.Log10(math.Max(v, 1)) }
		y0, y1 = math.Floor(ty(minY)), math.Ceil(ty(maxY))
	}
	px := func(v float64) float64 { return left + (lx(v)-x0)/(x1-x0)*pw }
	py := func(v float64) float64 { return top + ph - (ty(v)-y0)/(y1-y0)*ph }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">%s</text>`+"\n", left, esc(c.title))
	for e := x0; e <= x1; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x, top, x, h-bottom, x, h-bottom+16, compact(math.Pow(10, e)))
	}
	var ticks []float64
	if c.logY {
		for e := y0; e <= y1; e++ {
			ticks = append(ticks, math.Pow(10, e))
		}
	} else {
		for i := 0; i <= 5; i++ {
			ticks = append(ticks, y1*float64(i)/5)
		}
	}
	for _, v := range ticks {
		y := py(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left, y, w-right, y, left-6, y+4, compact(v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, h-18, esc(c.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", top+ph/2, esc(c.yLabel))
	for i, s := range c.series {
		sort.Slice(s.points, func(a, b int) bool { return s.points[a][0] < s.points[b][0] })
		var pts []string
		for _, p := range s.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1])))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", s.colour, dash, strings.Join(pts, " "))
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, strings.Split(p, ",")[0], strings.Split(p, ",")[1], s.colour)
		}
		ly := top + 10 + i*20
		fmt.Fprintf(&b, "\n"+`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+12, ly, w-right+36, ly, s.colour, dash, w-right+42, ly+4, esc(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func compact(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", v)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
