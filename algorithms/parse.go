package algorithms

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ParseRate reads a rate written as a whole count per period, such as
// "100/min", "10/s", "5000/h", "1000000/day", "3/secs", "7/1500ms" or
// "100/5m". The period is a unit word (s, sec, second, m, min, minute, h,
// hr, hour, d or day, or the plural of a word: secs, seconds, mins,
// minutes, hrs, hours, days), optionally after a whole number ("5min",
// "2 days"), or any duration time.ParseDuration reads ("1500ms", "1h30m").
// A day is 24 hours. ParseRate reads what Rate.String writes, so
// ParseRate(r.String()) is r for every valid r.
//
// The rate is validated. Text that is not a whole count, a "/" and a
// period, a count outside [1, 2^50], and a period that is not a whole
// number of microseconds in [1µs, 2^50µs] ("10/0s", "10/-1s", "10/1ns")
// wrap ErrInvalidAlgorithm.
func ParseRate(s string) (Rate, error) {
	count, period, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return Rate{}, fmt.Errorf("%w: rate %q: want a count per period, such as 100/min", ErrInvalidAlgorithm, s)
	}
	count = strings.TrimSpace(count)
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil {
		switch {
		case errors.Is(err, strconv.ErrRange) && strings.HasPrefix(count, "-"):
			return Rate{}, fmt.Errorf("%w: a rate's count must be > 0, got %q", ErrInvalidAlgorithm, s)
		case errors.Is(err, strconv.ErrRange):
			return Rate{}, fmt.Errorf("%w: the count of %q is above 2^50", ErrInvalidAlgorithm, s)
		}
		return Rate{}, fmt.Errorf("%w: rate %q: the count must be a whole number", ErrInvalidAlgorithm, s)
	}
	d, err := parsePeriod(period)
	if err != nil {
		return Rate{}, err
	}
	r := Rate{Count: n, Period: d}
	if _, err := r.validate(); err != nil {
		return Rate{}, err
	}
	return r, nil
}

// periodUnits are the unit words parsePeriod reads: each word of the doc,
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

// parsePeriod reads the period of a rate, as ParseRate describes it. It
// rejects text that is neither form, a period that is not positive and one
// too long for a time.Duration; ParseRate checks the rest of the range.
func parsePeriod(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	if unit, ok := periodUnits[strings.TrimSpace(s[digits:])]; ok {
		n := int64(1)
		if digits > 0 {
			var err error
			if n, err = strconv.ParseInt(s[:digits], 10, 64); err != nil || n > int64(1<<63-1)/int64(unit) {
				return 0, fmt.Errorf("%w: period %q is above 2^50µs", ErrInvalidAlgorithm, s)
			}
		}
		if n <= 0 {
			return 0, fmt.Errorf("%w: period must be a positive whole number of microseconds, got %q", ErrInvalidAlgorithm, s)
		}
		return time.Duration(n) * unit, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil && durationForm.MatchString(s) && strings.HasPrefix(s, "-"):
		return 0, fmt.Errorf("%w: period must be a positive whole number of microseconds, got %q", ErrInvalidAlgorithm, s)
	case err != nil && durationForm.MatchString(s):
		// Well formed, so too long for a time.Duration.
		return 0, fmt.Errorf("%w: period %q is above 2^50µs", ErrInvalidAlgorithm, s)
	case err != nil:
		return 0, fmt.Errorf(
			"%w: period %q: want a unit such as s, min, h or day, or a duration such as 1500ms",
			ErrInvalidAlgorithm,
			s,
		)
	case d <= 0:
		return 0, fmt.Errorf("%w: period must be a positive whole number of microseconds, got %q", ErrInvalidAlgorithm, s)
	}
	return d, nil
}
