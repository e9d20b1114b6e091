package algorithms

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidRate is wrapped by ParseRate and ParsePeriod for text that is
// not a count per period.
var ErrInvalidRate = errors.New("ratewise: invalid rate")

// ParseRate reads a rate written as a whole count per period, such as
// "100/min", "10/s", "5000/h", "1000000/day", "3/secs", "7/1500ms" or
// "100/5m" (see ParsePeriod). It reads what Rate.String writes, so
// ParseRate(r.String()) is r for every valid r. The rate is validated:
//
//   - text that is not a whole count, a "/" and a period wraps
//     ErrInvalidRate;
//   - a count below 1 wraps ErrInvalidLimit;
//   - a period that is not positive or not a whole number of
//     microseconds ("10/0s", "10/-1s", "10/1ns") wraps ErrInvalidPeriod;
//   - a count above 2^50 or a period above 2^50µs wraps ErrOutOfRange.
func ParseRate(s string) (Rate, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w %q: want a count per period, such as 100/min", ErrInvalidRate, s)
	}
	count = strings.TrimSpace(count)
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		switch {
		case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(count, "-"):
			return Rate{}, fmt.Errorf("%w, got the count of %q", ErrInvalidLimit, s)
		case errors.Is(err, strconv.ErrRange):
			return Rate{}, fmt.Errorf("%w: the count of %q is above 2^50", ErrOutOfRange, s)
		}
		return Rate{}, fmt.Errorf("%w %q: the count must be a whole number", ErrInvalidRate, s)
	}
	d, err := ParsePeriod(period)
	if err != nil {
		return Rate{}, err
	}
	r := Rate{Count: n, Period: d}
	if _, err := r.validate(); err != nil {
		return Rate{}, err
	}
	return r, nil
}

// periodUnits are the unit words ParsePeriod reads: each word of the doc,
// and the plural of each that has one.
var periodUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// durationForm is the syntax time.ParseDuration reads, whatever the size
// of the numbers.
var durationForm = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// ParsePeriod reads the period of a rate: a unit word (s, sec, second, m,
// min, minute, h, hr, hour, d or day, or the plural of a word: secs,
// seconds, mins, minutes, hrs, hours, days), optionally after a whole
// number ("5min", "2 days"), or any duration time.ParseDuration reads
// ("1500ms", "1h30m"). A day is 24 hours. Text that is neither wraps
// ErrInvalidRate; a period that is not positive ("0s", "-1s") wraps
// ErrInvalidPeriod, and one too long for a time.Duration wraps
// ErrOutOfRange. ParseRate checks the rest of the range.
func ParsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if unit, ok := periodUnits[strings.TrimSpace(s[digits:])]; ok {
		n := int64(1)
		if digits > 0 {
			var err error
			if n, err = strconv.ParseInt(s[:digits], 10, 64); err != nil || n > int64(1<<63-1)/int64(unit) {
				return 0, fmt.Errorf("%w: period %q is above 2^50µs", ErrOutOfRange, s)
			}
		}
		if n <= 0 {
			return 0, fmt.Errorf("%w, got period %q", ErrInvalidPeriod, s)
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && durationForm.MatchString(s) && strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("%w, got period %q", ErrInvalidPeriod, s)
	case err != nil && durationForm.MatchString(s):
		// Well formed, so too long for a time.Duration.
		return 0, fmt.Errorf("%w: period %q is above 2^50µs", ErrOutOfRange, s)
	case err != nil:
		return 0, fmt.Errorf(
			"%w: period %q: want a unit such as s, min, h or day, or a duration such as 1500ms",
			ErrInvalidRate,
			s,
		)
	case d <= 0:
		return 0, fmt.Errorf("%w, got period %q", ErrInvalidPeriod, s)
	}
	return d, nil
}
