// Package svgplot draws line charts as plain SVG, so that ratewise's docs
// need no plotting tool: the commands that measure also draw.
package svgplot

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Series is one line of a chart.
type Series struct {
	Name   string
	Colour string
	Dashed bool
	// Markers draws a dot at every point, for sparse measured series.
	Markers bool
	// Width is the stroke width; 0 means 2.
	Width  float64
	Points [][2]float64 // x, y
}

// Chart is a line chart.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	// XTick formats an x tick label; nil prints the number compactly.
	XTick func(float64) string
	// XTicks places the x ticks; nil spaces them evenly.
	XTicks []float64
	Series []Series
}

// Colours is a palette for series that need no particular colour.
var Colours = []string{"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

// axis maps values to pixels along one dimension.
type axis struct {
	log      bool
	min, max float64 // in transformed units
}

func newAxis(log bool, lo, hi float64) axis {
	if log {
		lo, hi = math.Log10(math.Max(lo, 1e-9)), math.Log10(math.Max(hi, 1e-9))
		return axis{log: true, min: math.Floor(lo), max: math.Max(math.Ceil(hi), math.Floor(lo)+1)}
	}
	if hi <= lo {
		hi = lo + 1
	}
	return axis{min: math.Min(lo, 0), max: NiceCeil(hi)}
}

func (a axis) frac(v float64) float64 {
	if a.log {
		v = math.Log10(math.Max(v, 1e-9))
	}
	return (v - a.min) / (a.max - a.min)
}

func (a axis) ticks() []float64 {
	var t []float64
	if a.log {
		for e := a.min; e <= a.max; e++ {
			t = append(t, math.Pow(10, e))
		}
		return t
	}
	for i := 0; i <= 5; i++ {
		t = append(t, a.min+(a.max-a.min)*float64(i)/5)
	}
	return t
}

// SVG renders the chart.
func (c Chart) SVG() string {
	const w, h, left, top, bottom = 840, 420, 80, 40, 60
	// The legend sits on the right, as wide as its longest name.
	right := 60
	for _, s := range c.Series {
		right = max(right, 60+7*len([]rune(s.Name)))
	}
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
			minY, maxY = math.Min(minY, p[1]), math.Max(maxY, p[1])
		}
	}
	if math.IsInf(minX, 0) {
		minX, maxX, minY, maxY = 0, 1, 0, 1
	}
	ax := newAxis(c.LogX, minX, maxX)
	if !c.LogX {
		ax.min, ax.max = minX, maxX
		if ax.max <= ax.min {
			ax.max = ax.min + 1
		}
	}
	ay := newAxis(c.LogY, minY, maxY)
	px := func(v float64) float64 { return left + ax.frac(v)*pw }
	py := func(v float64) float64 { return top + ph - ay.frac(v)*ph }
	xTick := c.XTick
	if xTick == nil {
		xTick = Compact
	}

	var b strings.Builder
	fmt.Fprintf(
		&b,
		`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n",
		w,
		h,
	)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">%s</text>`+"\n", left, esc(c.Title))
	xTicks := c.XTicks
	if xTicks == nil {
		xTicks = ax.ticks()
	}
	for _, v := range xTicks {
		x := px(v)
		fmt.Fprintf(
			&b,
			`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
			x,
			top,
			x,
			h-bottom,
			x,
			h-bottom+16,
			esc(xTick(v)),
		)
	}
	for _, v := range ay.ticks() {
		y := py(v)
		fmt.Fprintf(
			&b,
			`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n",
			left,
			y,
			w-right,
			y,
			left-6,
			y+4,
			Compact(v),
		)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", left+pw/2, h-18, esc(c.XLabel))
	fmt.Fprintf(
		&b,
		`<text transform="translate(18,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		top+ph/2,
		esc(c.YLabel),
	)
	for i, s := range c.Series {
		points := append([][2]float64(nil), s.Points...)
		sort.SliceStable(points, func(a, b int) bool { return points[a][0] < points[b][0] })
		pts := make([]string, len(points))
		for j, p := range points {
			pts[j] = fmt.Sprintf("%.1f,%.1f", px(p[0]), py(p[1]))
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		width := s.Width
		if width == 0 {
			width = 2
		}
		fmt.Fprintf(
			&b,
			`<polyline fill="none" stroke="%s" stroke-width="%g"%s points="%s"/>`+"\n",
			s.Colour,
			width,
			dash,
			strings.Join(pts, " "),
		)
		if s.Markers {
			for _, p := range points {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(p[0]), py(p[1]), s.Colour)
			}
			b.WriteString("\n")
		}
		ly := top + 10 + i*20
		fmt.Fprintf(
			&b,
			`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
			w-right+12,
			ly,
			w-right+36,
			ly,
			s.Colour,
			dash,
			w-right+42,
			ly+4,
			esc(s.Name),
		)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// NiceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten.
func NiceCeil(v float64) float64 {
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

// Compact prints a number with a k, M or G suffix.
func Compact(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%gG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%gM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%gk", v/1e3)
	}
	return fmt.Sprintf("%g", math.Round(v*100)/100)
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
