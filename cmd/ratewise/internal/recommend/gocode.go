package recommend

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/ratewise/ratewise/cmd/ratewise/internal/report"
)

// configOf writes a candidate as Go code, each algorithm configured as its
// kind's configure does for in; two or more are a ratewise.Stack.
func configOf(in Input, c candidate) string {
	var parts []string
	for _, k := range c.kinds {
		code, err := k.goCode(in)
		if err != nil {
			code = fmt.Sprintf("/* %s: %v */", k.name, err)
		}
		parts = append(parts, code)
	}
	code := strings.Join(parts, ", ")
	if len(parts) > 1 {
		return "ratewise.NewStack(store, []algorithms.Algorithm{" + code + "})"
	}
	return code
}

// goCode writes v, an algorithm, as the Go expression that builds it: its
// type, qualified by its package's name, then each exported field as
// "Name: value", such as
//
//	algorithms.GCRA{Rate: algorithms.Rate{Count: 50, Period: time.Second}, Burst: 20}
//
// A field of a struct type, such as algorithms.Rate, is a composite literal
// of its own, a time.Duration is time's constants (90 * time.Second), and an
// integer has underscores between thousands (6_000), and a nil field, such
// as a pointer, is left out. Nothing here names an
// algorithm, so that an algorithm type added to package algorithms prints
// as the others do. A value it cannot write, such as a pointer that is not
// nil or a non-zero unexported field, is an error.
func goCode(v any) (string, error) {
	if v == nil {
		return "", fmt.Errorf("cannot write nil as Go code")
	}
	return goValue(reflect.ValueOf(v))
}

var durationType = reflect.TypeFor[time.Duration]()

func goValue(v reflect.Value) (string, error) {
	t := v.Type()
	if t == durationType {
		return goDuration(time.Duration(v.Int())), nil
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return goInt(v.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if u := v.Uint(); u > math.MaxInt64 {
			return strconv.FormatUint(u, 10), nil
		}
		return goInt(int64(v.Uint())), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.String:
		return strconv.Quote(v.String()), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return "", fmt.Errorf("cannot write %v as a Go constant", f)
		}
		return strconv.FormatFloat(f, 'g', -1, t.Bits()), nil
	case reflect.Struct:
		if t.Name() == "" {
			return "", fmt.Errorf("cannot write an unnamed struct type as Go code")
		}
		var fields []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				if !v.Field(i).IsZero() {
					return "", fmt.Errorf("cannot write %s as Go code: its unexported field %s is set", t, f.Name)
				}
				continue
			}
			if nilable(v.Field(i)) {
				// A composite literal leaves it nil, as the calendar window's
				// Location is for UTC.
				continue
			}
			s, err := goValue(v.Field(i))
			if err != nil {
				return "", err
			}
			fields = append(fields, f.Name+": "+s)
		}
		return qualified(t) + "{" + strings.Join(fields, ", ") + "}", nil
	}
	return "", fmt.Errorf("cannot write %s, a %s, as Go code", t, t.Kind())
}

// nilable reports whether v is a nil pointer, interface, map, slice, func
// or channel.
func nilable(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// qualified is t's name as another package writes it. The package's name
// is taken to be the last element of its import path, as it is for every
// package of this module.
func qualified(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.Name()
	}
	return path.Base(t.PkgPath()) + "." + t.Name()
}

// goInt writes n as a Go literal, with underscores between thousands.
func goInt(n int64) string { return strings.ReplaceAll(report.Int(n), ",", "_") }

// goDuration writes d as a Go expression: a multiple of the largest of
// time's constants (and of 24 hours) that divides it.
func goDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{
		{24 * time.Hour, "24 * time.Hour"}, {time.Hour, "time.Hour"}, {time.Minute, "time.Minute"},
		{time.Second, "time.Second"}, {time.Millisecond, "time.Millisecond"},
		{time.Microsecond, "time.Microsecond"}, {time.Nanosecond, "time.Nanosecond"},
	} {
		if d%u.d == 0 {
			if d == u.d {
				return u.name
			}
			return fmt.Sprintf("%d * %s", d/u.d, u.name)
		}
	}
	panic("unreachable: every duration is a whole number of nanoseconds")
}
