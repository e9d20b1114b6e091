package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"

	"github.com/ratewise/ratewise/replay"
)

// csvHeader is the CSV's columns. Each record is one of two sections,
// named in its first column: "replay", one algorithm on one workload on one
// store, and "timed", one algorithm timed on one store; a column that does
// not apply to a section is empty.
var csvHeader = []string{
	"section",
	"workload",
	"limit",
	"window_seconds",
	"algorithm",
	"params",
	"requests",
	"admitted",
	"denied",
	"max_in_window",
	"overshoot",
	"over_limit_admits",
	"false_admits",
	"false_denials",
	"store",
	"bytes_per_key",
	"keys_measured",
	"round_trips_per_decision",
	"commands_per_decision",
	"goroutines",
	"keys",
	"decisions",
	"decisions_per_second",
	"p50_us",
	"p99_us",
}

func writeCSV(w io.Writer, rep *replay.Report) error {
	cw := csv.NewWriter(w)
	cw.Write(csvHeader)
	info := map[string]replay.WorkloadInfo{}
	for _, wl := range rep.Workloads {
		info[wl.Name] = wl
	}
	num := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'f', 2, 64)
	}
	i64 := func(n int64) string { return strconv.FormatInt(n, 10) }
	seconds := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) }
	for _, r := range rep.Rows {
		wl := info[r.Workload]
		for _, s := range r.Stores {
			keys := ""
			if s.KeysHeld > 0 {
				keys = strconv.Itoa(s.KeysHeld)
			}
			cw.Write([]string{"replay", r.Workload, i64(wl.Limit), seconds(wl.Window),
				r.Algorithm, r.Params, i64(r.Requests), i64(r.Admitted), i64(r.Denied),
				i64(r.MaxInWindow), strconv.FormatFloat(r.Overshoot, 'f', 4, 64), i64(r.OverLimit),
				i64(r.FalseAdmits), i64(r.FalseDenials),
				s.Target, num(s.BytesPerKey), keys, strconv.FormatFloat(s.RoundTripsPerDecision, 'f', 4, 64),
				num(s.CommandsPerDecision),
				"", "", "", "", "", ""})
		}
	}
	for _, tm := range rep.Timings {
		cw.Write([]string{"timed", "", i64(rep.TimedLimit), seconds(rep.TimedWindow),
			tm.Algorithm, "", "", "", "",
			"", "", "", "", "",
			tm.Target, "", "", "", "",
			strconv.Itoa(
				tm.Goroutines,
			), strconv.Itoa(tm.Keys), i64(tm.Decisions), strconv.FormatFloat(tm.PerSecond, 'f', 0, 64),
			strconv.FormatFloat(float64(tm.P50)/1e3, 'f', 3, 64), strconv.FormatFloat(float64(tm.P99)/1e3, 'f', 3, 64)})
	}
	cw.Flush()
	return cw.Error()
}
