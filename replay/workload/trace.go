package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// ReadTrace reads a trace of one request per line:
//
//	<time> [<key> [<cost>]]
//
// separated by spaces, tabs or commas. <time> is an RFC 3339 timestamp or a
// number of seconds since the Unix epoch (so offsets such as 0.25 from the
// start of a recording work too); <key> defaults to "trace" and <cost> to 1.
// Blank lines and lines starting with # are skipped, and so is a header
// such as "time,key,cost" on the first other line. Requests need not be in
// order. Every algorithm replays the trace with limit l.
//
// The trace keeps its own instants, to the microsecond: its Start is the
// first request's instant, and its Duration the span to the last request
// (plus a microsecond, so that the last one falls inside it).
func ReadTrace(r io.Reader, name string, l Limit) (*Workload, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	type raw struct {
		at   time.Time
		key  string
		cost int64
	}
	var rows []raw
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	firstLine := true
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' })
		header := firstLine && isHeader(fields)
		firstLine = false
		if header {
			continue
		}
		if len(fields) > 3 {
			return nil, fmt.Errorf(
				"%w: %s:%d: want <time> [<key> [<cost>]], got %d fields",
				ErrInvalid,
				name,
				line,
				len(fields),
			)
		}
		at, err := parseTime(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrInvalid, name, line, err)
		}
		row := raw{at: at, key: "trace", cost: 1}
		if len(fields) > 1 {
			row.key = fields[1]
		}
		if len(fields) > 2 {
			if row.cost, err = strconv.ParseInt(fields[2], 10, 64); err != nil || row.cost <= 0 {
				return nil, fmt.Errorf("%w: %s:%d: cost must be a positive integer, got %q", ErrInvalid, name, line, fields[2])
			}
			if row.cost > l.Count {
				return nil, fmt.Errorf(
					"%w: %s:%d: cost %d exceeds the limit %d and could never be admitted",
					ErrInvalid,
					name,
					line,
					row.cost,
					l.Count,
				)
			}
		}
		rows = append(rows, row)
		if len(rows) > maxRequests {
			return nil, fmt.Errorf("%w: %s holds more than %d requests", ErrInvalid, name, maxRequests)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s holds no requests", ErrInvalid, name)
	}
	first, last := rows[0].at, rows[0].at
	for _, r := range rows {
		if r.at.Before(first) {
			first = r.at
		}
		if r.at.After(last) {
			last = r.at
		}
	}
	// Every request keeps its own instant, Start plus its offset, so the
	// trace keeps its place against fixed windows and sub-windows, which
	// start at multiples of their length since the Unix epoch.
	start := time.UnixMicro(first.UnixMicro()).UTC()
	b := newBuilder("trace", "", l, last.Sub(start)+time.Microsecond, 0, 0)
	b.w.Start = start
	index := map[string]int{}
	for _, r := range rows {
		k, ok := index[r.key]
		if !ok {
			k = len(b.w.Keys)
			index[r.key] = k
			b.w.Keys = append(b.w.Keys, r.key)
		}
		b.add(r.at.Sub(start), k, r.cost)
	}
	b.w.Description = fmt.Sprintf(
		"%s: %d requests from %d key(s) over %v",
		name,
		len(rows),
		len(b.w.Keys),
		last.Sub(first).Round(time.Millisecond),
	)
	return b.done(), nil
}

// isHeader reports whether fields, a trace's first line, are a header such
// as "time,key,cost" rather than a request: the first is not a time, and
// either it is a usual name for a time column or no field holds a digit.
func isHeader(fields []string) bool {
	if _, err := parseTime(fields[0]); err == nil {
		return false
	}
	switch strings.ToLower(strings.Trim(fields[0], `"'`)) {
	case "time", "timestamp", "ts", "at", "date", "datetime", "when", "t":
		return true
	}
	for _, f := range fields {
		if strings.ContainsAny(f, "0123456789") {
			return false
		}
	}
	return true
}

func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	sec, err := strconv.ParseFloat(s, 64)
	if err != nil || sec < 0 || math.IsInf(sec, 0) || sec > 1e11 {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339 or seconds since the Unix epoch", s)
	}
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e6))*1e3).UTC(), nil
}
