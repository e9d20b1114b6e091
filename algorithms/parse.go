package algorithms

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrInvalidRate is wrapped by ParseRate and ParsePeriod for text that is
// not a count per period.
var ErrInvalidRate = errors.New("ratewise: invalid rate")

// ParseRate reads a rate written as a whole count per period, such as
// "100/min", "10/s", "5000/h", "1000000/day", "7/1500ms" or "100/5m" (see
// ParsePeriod). It reads what Rate.String writes, so ParseRate(r.String())
// is r for every valid r. The rate is validated: a count or period out of
// range is an error wrapping ErrInvalidLimit, ErrInvalidPeriod or
// ErrOutOfRange; text that is not a rate wraps ErrInvalidRate.
func ParseRate(s string) (Rate, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w %q: want a count per period, such as 100/min", ErrInvalidRate, s)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
	if err != nil {
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

// periodUnits are the unit words ParsePeriod reads.
var periodUnits = map[string]time.Duration{
	"s": time.Second, "sec": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
}

// ParsePeriod reads the period of a rate: a unit word (s, sec, second, m,
// min, minute, h, hr, hour, d, day, or their plurals), optionally after a
// whole number ("5min", "2d"), or any duration time.ParseDuration reads
// ("1500ms", "1h30m"). A day is 24 hours. The period must be positive.
func ParsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if unit, ok := periodUnits[strings.TrimSpace(s[digits:])]; ok {
		n := int64(1)
		if digits > 0 {
			var err error
			if n, err = strconv.ParseInt(s[:digits], 10, 64); err != nil || n > int64(1<<63-1)/int64(unit) {
				return 0, fmt.Errorf("%w: period %q is too long", ErrInvalidRate, s)
			}
		}
		if n <= 0 {
			return 0, fmt.Errorf("%w: period %q must be positive", ErrInvalidRate, s)
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%w: period %q: want a unit such as s, min, h or day, or a duration such as 1500ms", ErrInvalidRate, s)
	}
	return d, nil
}
