package recommend

import (
	"fmt"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
	"github.com/ratewise/ratewise/internal/algo"
)

// configOf writes a candidate as Go code, configured as Configured does.
func configOf(in Input, c candidate) string {
	window := goDuration(in.Window)
	if in.Calendar == Month {
		window = "31 * 24 * time.Hour"
	}
	var parts []string
	for _, name := range c.algs {
		alg, err := Configured(in, name)
		if err != nil {
			parts = append(parts, fmt.Sprintf("/* %s: %v */", name, err))
			continue
		}
		p := algo.ParamsOf(alg)
		limit := goInt(p.Limit)
		switch name {
		case "fixed_window":
			parts = append(parts, fmt.Sprintf("algorithms.FixedWindow{Limit: %s, Window: %s}", limit, window))
		case "sliding_log":
			parts = append(parts, fmt.Sprintf("algorithms.SlidingLog{Limit: %s, Window: %s}", limit, window))
		case "compact_log":
			parts = append(parts, fmt.Sprintf("algorithms.CompactLog{Limit: %s, Window: %s}", limit, window))
		case "sliding_window":
			parts = append(parts, fmt.Sprintf("algorithms.SlidingWindow{Limit: %s, Window: %s, SubWindows: %d}", limit, window, p.SubWindows))
		case "gcra":
			parts = append(parts, fmt.Sprintf("algorithms.GCRA{Rate: algorithms.Rate{Count: %s, Period: %s}, Burst: %s}", limit, window, goInt(p.Burst)))
		case "token_bucket":
			parts = append(parts, fmt.Sprintf("algorithms.TokenBucket{Capacity: %s, Refill: algorithms.Rate{Count: %s, Period: %s}}", goInt(p.Burst), limit, window))
		}
	}
	code := strings.Join(parts, ", ")
	if len(parts) > 1 {
		return "ratewise.NewSet(store, []algorithms.Algorithm{" + code + "})"
	}
	return code
}

// goInt writes n as a Go literal, with underscores between thousands.
func goInt(n int64) string { return strings.ReplaceAll(report.Int(n), ",", "_") }

// goDuration writes d as a Go expression.
func goDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "24 * time.Hour"}, {time.Hour, "time.Hour"}, {time.Minute, "time.Minute"}, {time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"}} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d * time.Microsecond", d/time.Microsecond)
}
