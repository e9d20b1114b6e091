// Package report renders what ratewise compare measured: aligned tables for
// a terminal, Markdown, CSV, JSON and SVG charts.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/replay"
)

// Formats lists the formats Write accepts.
var Formats = []string{"table", "markdown", "csv", "json"}

// Write renders rep to w in format, one of Formats.
func Write(w io.Writer, rep *replay.Report, format string) error {
	switch format {
	case "table":
		return writeTables(w, rep, false)
	case "markdown":
		return writeTables(w, rep, true)
	case "csv":
		return writeCSV(w, rep)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
}

// Duration prints d without zero units: "1m", "1h", "1.5s".
func Duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Int prints n with thousands separators.
func Int(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// Keys prints a number of keys, "1 key" or "100,000 keys".
func Keys(n int64) string {
	if n == 1 {
		return "1 key"
	}
	return Int(n) + " keys"
}

// Fixed2 prints v with two decimals, as ratios are shown.
func Fixed2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// Latency prints d to three significant figures.
func Latency(d time.Duration) string {
	switch {
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	}
	return fmt.Sprintf("%dns", d)
}
