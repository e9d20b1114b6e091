package main

import (
	"os"
	"path/filepath"

	"github.com/ratewise/ratewise/internal/testkit/svgplot"
)

func writeCharts(dir string, mem []memoryRow, lat []latencyRow) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	memory := svgplot.Chart{
		Title:  "Redis memory per key against QPS × window",
		XLabel: "records in the window (QPS × window)",
		YLabel: "bytes per key",
		LogX:   true,
		LogY:   true,
	}
	log := svgplot.Series{Name: "sliding log (measured)", Colour: "#d62728", Markers: true}
	estimate := svgplot.Series{Name: "common estimate (100 B per record)", Colour: "#d62728", Dashed: true, Markers: true}
	window := svgplot.Series{Name: "sliding window counter, 60 sub-windows", Colour: "#1f77b4", Markers: true}
	bucket := svgplot.Series{Name: "token bucket", Colour: "#2ca02c", Markers: true}
	gcra := svgplot.Series{Name: "GCRA", Colour: "#9467bd", Dashed: true, Markers: true}
	for _, r := range mem {
		x := float64(r.records())
		if r.measuredLog {
			log.Points = append(log.Points, [2]float64{x, float64(r.logBytes)})
		}
		estimate.Points = append(estimate.Points, [2]float64{x, x * 100})
		window.Points = append(window.Points, [2]float64{x, float64(r.windowBytes)})
		bucket.Points = append(bucket.Points, [2]float64{x, float64(r.bucketBytes)})
		gcra.Points = append(gcra.Points, [2]float64{x, float64(r.gcraBytes)})
	}
	memory.Series = []svgplot.Series{estimate, log, window, bucket, gcra}

	latency := svgplot.Chart{
		Title:  "Sliding-log decision latency against records N",
		XLabel: "records N in the log",
		YLabel: "µs per decision",
		LogX:   true,
	}
	server := svgplot.Series{Name: "Redis server time", Colour: "#1f77b4", Markers: true}
	p50 := svgplot.Series{Name: "client p50", Colour: "#2ca02c", Markers: true}
	p99 := svgplot.Series{Name: "client p99", Colour: "#d62728", Markers: true}
	for _, r := range lat {
		x := float64(r.n)
		server.Points = append(server.Points, [2]float64{x, r.serverMicros})
		p50.Points = append(p50.Points, [2]float64{x, float64(r.p50.Microseconds())})
		p99.Points = append(p99.Points, [2]float64{x, float64(r.p99.Microseconds())})
	}
	latency.Series = []svgplot.Series{server, p50, p99}

	for name, c := range map[string]svgplot.Chart{"memory.svg": memory, "latency.svg": latency} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(c.SVG()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
