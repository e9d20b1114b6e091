package svgplot

import (
	"strings"
	"testing"
)

func TestChartDrawsEverySeriesAndTick(t *testing.T) {
	c := Chart{Title: "a < b", XLabel: "x", YLabel: "y", LogX: true, Series: []Series{
		{Name: "up", Colour: "#f00", Points: [][2]float64{{10, 1}, {1000, 3}}},
		{Name: "flat", Colour: "#00f", Dashed: true, Markers: true, Points: [][2]float64{{10, 2}, {1000, 2}}},
	}}
	svg := c.SVG()
	for _, want := range []string{
		"a &lt; b", ">up<", ">flat<", ">10<", ">100<", ">1k<", `stroke-dasharray="6,4"`, "<circle",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	if got := strings.Count(svg, "<polyline"); got != 2 {
		t.Errorf("polylines: got %d, want 2", got)
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.7: 1, 3: 5, 120: 200, 201: 250, 1e6: 1e6} {
		if got := NiceCeil(in); got != want {
			t.Errorf("NiceCeil(%g): got %g, want %g", in, got, want)
		}
	}
}
