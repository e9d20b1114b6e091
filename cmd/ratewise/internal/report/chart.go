package report

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ratewise/ratewise/internal/testkit/svgplot"
	"github.com/ratewise/ratewise/replay"
)

// WriteCharts writes one SVG per workload into dir, named after the
// workload, and returns the file names.
func WriteCharts(dir string, rep *replay.Report) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, wl := range rep.Workloads {
		lines := rep.Charts[wl.Name]
		if len(lines) == 0 {
			continue
		}
		c := Chart(wl, lines)
		name := wl.Name + ".svg"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c.SVG()), 0o644); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

// Chart plots a workload's lines: the offered load and each algorithm's
// admissions in the trailing window, against the limit.
func Chart(wl replay.WorkloadInfo, lines []replay.Line) svgplot.Chart {
	c := svgplot.Chart{
		Title: fmt.Sprintf(
			"%s: admitted in the trailing %s, busiest key (limit %d)",
			wl.Name,
			Duration(wl.Window),
			wl.Limit,
		),
		XLabel: "simulated time since the start",
		YLabel: "admitted in the trailing " + Duration(wl.Window),
		XTick:  func(v float64) string { return Duration(time.Duration(v).Round(time.Second)) },
	}
	end := float64(wl.Duration)
	step := time.Second
	for _, d := range []time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
		2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 24 * time.Hour} {
		if wl.Duration/step <= 8 {
			break
		}
		step = d
	}
	for t := time.Duration(0); t <= wl.Duration; t += step {
		c.XTicks = append(c.XTicks, float64(t))
	}
	c.Series = append(c.Series, svgplot.Series{Name: "limit", Colour: "#000000", Dashed: true,
		Points: [][2]float64{{0, float64(wl.Limit)}, {end, float64(wl.Limit)}}})
	// Algorithms that admit alike draw on top of each other; each line is
	// thinner than the one before, so that every one stays visible.
	colour := 0
	for i, l := range lines {
		s := svgplot.Series{Name: l.Name, Width: max(1, 6-float64(i))}
		if l.Name == "offered" {
			s.Colour, s.Dashed, s.Width = "#bbbbbb", true, 2
		} else {
			s.Colour = svgplot.Colours[colour%len(svgplot.Colours)]
			colour++
		}
		for _, p := range l.Points {
			s.Points = append(s.Points, [2]float64{float64(p.At), float64(p.Value)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}
