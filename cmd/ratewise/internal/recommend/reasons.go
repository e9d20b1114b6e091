package recommend

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// reasons explains the chosen candidate.
func (cat catalog) reasons(in Input, v verdict, figs map[string]Figures) []string {
	fixed, counterFigs := figs[cat.preferred(fixedWindow, figs).name], figs[cat.preferred(counter, figs).name]
	budget := fmt.Sprintf(
		"%s for %s (%s per key on %s%s) within the %s budget; a decision takes %s in %s, within %s",
		Bytes(
			v.bytes,
		),
		report.Keys(in.Keys),
		Bytes(v.perKey),
		v.store,
		extrapolatedText(v.extrapolated),
		Bytes(float64(in.MemoryBudget)),
		v.time,
		v.store,
		report.Latency(in.LatencyBudget),
	)
	var out []string
	main := v.c.kinds[0]
	f := figs[main.name]
	switch {
	case calendar.is(main):
		out = append(out, cat.calendarReason(in, main, fixed))
	case in.Calendar == Day:
		out = append(
			out,
			fmt.Sprintf(
				"calendar: a quota per UTC day resets at midnight, which is what a fixed window of 24h does: its windows "+
					"start at multiples of the window since the Unix epoch, so each one is a UTC day. "+
					"Its boundary cost is the calendar quota's own: a key may use the whole quota just before midnight and "+
					"again just after, %s in a short span (measured on the boundary attack)",
				overshootOn(fixed, "boundary"),
			),
		)
	case in.Calendar == Month:
		out = append(
			out,
			fmt.Sprintf(
				"calendar: a month has no fixed length, and a fixed window's boundaries, at multiples of its length "+
					"since the Unix epoch, cannot follow it: "+
					"a fixed window of 31 days resets inside almost every month and gives the key a second quota there. "+
					"Name the month in the key (\"user:1001:2026-12\"), so that every month starts at zero, and count it "+
					"with a sliding window counter of 31 days in 31 sub-windows of one UTC day: "+
					"a request stops counting 30 to 31 days after it was made, never within its own month, so the counter "+
					"counts the whole month exactly, in at most 31 counters. "+
					"Its boundary cost is the calendar quota's own: a key may use the whole quota at the end of one month "+
					"and again at the start of the next, %s in a short span (the fixed window on the boundary "+
					"attack)",
				overshootOn(fixed, "boundary"),
			),
		)
	case v.c.exact && in.Precision == "exact":
		what := main.name + " counts every request"
		// The exact logs main was preferred to decide as it does.
		logs := cat.measured(exactLog, figs)
		if i := slices.IndexFunc(logs, func(k kind) bool { return k.name == main.name }); i >= 0 && i+1 < len(logs) {
			var others []string
			for _, k := range logs[i+1:] {
				others = append(others, fmt.Sprintf("%s (%s per key)", k.name, Bytes(figs[k.name].BytesPerKey)))
			}
			what = fmt.Sprintf(
				"%s decides exactly as %s, in %s per key",
				main.name,
				report.AndList(others),
				Bytes(f.BytesPerKey),
			)
		}
		out = append(
			out,
			fmt.Sprintf(
				"precision: exact was asked for, and %s: %s; the fixed window reached %s",
				what,
				accuracy(f),
				worst(fixed.Overshoot),
			),
		)
	case in.Precision == "exact":
		out = append(
			out,
			fmt.Sprintf(
				"precision: exact was asked for, but no exact log fits (see the rejections); %s is the nearest "+
					"approximation, and it is not exact: %s",
				main.name,
				accuracy(f),
			),
		)
	case in.Burst > 0:
		out = append(
			out,
			fmt.Sprintf(
				"burst: bursts of at most %s at a sustained %s per %s are exactly the two parameters of %s, while a "+
					"window counter admits its whole limit of %s at once. "+
					"%s itself admits up to the burst plus the rate within one window: %s",
				report.Int(
					in.Burst,
				),
				report.Int(in.Limit()),
				report.Duration(in.Window),
				main.name,
				report.Int(in.Limit()),
				main.name,
				accuracy(f),
			),
		)
	case counter.is(main):
		out = append(
			out,
			"precision: approximate was asked for; the sliding window counter keeps the window's meaning: "+accuracy(f),
		)
	default:
		out = append(
			out,
			fmt.Sprintf(
				"precision: approximate was asked for, and the sliding window counter does not fit (see the rejections); "+
					"%s keeps %s per key: %s",
				main.name,
				Bytes(f.BytesPerKey),
				accuracy(f),
			),
		)
	}
	if len(v.c.kinds) > 1 {
		burst := v.c.kinds[1]
		out = append(
			out,
			fmt.Sprintf(
				"burst: a window counter admits its whole limit at once; with %s (%s per %s, burst %s) beside it, as a "+
					"ratewise.Stack, a key sends at most %s at once and both limits hold; %s adds %s per key",
				burst.name,
				report.Int(in.Limit()),
				report.Duration(in.Window),
				report.Int(in.Burst),
				report.Int(in.Burst),
				burst.name,
				Bytes(figs[burst.name].BytesPerKey),
			),
		)
	}
	if !counter.is(main) && in.Calendar == "" && !(v.c.exact && in.Precision == "exact") {
		out = append(out, "the sliding window counter, for comparison: "+accuracy(counterFigs))
	}
	out = append(out, "cost: "+budget)
	return out
}

// calendarReason explains a calendar window recommended for in's calendar
// quota, with the Go code that sets its zone; fixed is the fixed window's
// figures, whose boundary attack is the quota's own boundary cost.
func (cat catalog) calendarReason(in Input, main kind, fixed Figures) string {
	zone := "set its Location in code"
	if code, err := main.goCode(in); err == nil && strings.HasSuffix(code, "}") {
		zone += ", " + strings.TrimSuffix(code, "}") + `, Location: loc} with loc from time.LoadLocation("Europe/Berlin")`
	}
	return fmt.Sprintf(
		"calendar: %s is the calendar quota itself: it counts %s per calendar %s and resets at the first instant "+
			"of each UTC %s, exactly on every store, in one count per key and with no date in the key. "+
			"To reset at midnight in another time zone, %s. "+
			"Its boundary cost is the calendar quota's own, as any fixed window's: a key may use the whole quota just "+
			"before a reset and again just after, %s in a short span (the fixed window on the boundary attack); "+
			"stack it with a rate (ratewise.Stack) to protect the server from such bursts",
		main.name,
		report.Int(in.Limit()),
		in.Calendar,
		in.Calendar,
		zone,
		overshootOn(fixed, "boundary"),
	)
}

// disagreements says where the classic thresholds and the measurements
// part: the thresholds of a sorted set are the classic exact log's.
func (cat catalog) disagreements(in Input, figs map[string]Figures) []string {
	log, counterFigs := figs[cat.classic(exactLog, figs).name], figs[cat.preferred(counter, figs).name]
	fits := func(f Figures) bool {
		return f.TotalBytes(in.Keys) <= float64(in.MemoryBudget) && f.Time.Median <= in.LatencyBudget
	}
	var out []string
	switch {
	case in.Calendar == Month:
		out = append(
			out,
			"the classic tree gives calendar quotas to the fixed window; that holds for a day, whose windows of 24h "+
				"are UTC days, but no fixed window follows the months",
		)
	case in.Calendar != "":
	case in.Precision == "exact":
		classicOK := !(in.QPS > classicSortedSetQPS && in.Window > classicSortedSetWindow)
		measuredOK := fits(log)
		switch {
		case !classicOK && measuredOK:
			out = append(out, fmt.Sprintf(
				"the classic thresholds rule the sorted set out above QPS %s with a window over %v; measured here, %s "+
					"records per key cost %s and a decision %s, within the budgets for %s keys: memory per busy "+
					"key and the number of keys decide, not QPS alone",
				report.Int(
					classicSortedSetQPS,
				),
				report.Duration(classicSortedSetWindow),
				report.Int(in.Limit()),
				Bytes(log.BytesPerKey),
				report.Latency(log.Time.Median),
				report.Int(in.Keys),
			))
		case classicOK && !measuredOK:
			out = append(out, fmt.Sprintf(
				"the classic thresholds allow the sorted set at QPS %g over %v, but for %s keys it needs %s against the "+
					"%s budget, and a decision takes %s: a threshold on QPS and window alone ignores the number of "+
					"keys",
				in.QPS,
				report.Duration(in.Window),
				report.Int(in.Keys),
				Bytes(log.TotalBytes(in.Keys)),
				Bytes(float64(in.MemoryBudget)),
				report.Latency(log.Time.Median),
			))
		}
	case in.QPS > classicCounterQPS && fits(counterFigs):
		out = append(out, fmt.Sprintf(
			"the classic thresholds send QPS above %s to a token or leaky bucket; measured here the sliding window "+
				"counter costs %s per key and a decision %s whatever the rate, so QPS alone does not rule it out",
			report.Int(classicCounterQPS),
			Bytes(counterFigs.BytesPerKey),
			report.Latency(counterFigs.Time.Median),
		))
	}
	return out
}
