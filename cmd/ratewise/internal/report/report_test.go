package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestFormatting(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := Int(in); got != want {
			t.Errorf("Int(%d): got %q, want %q", in, got, want)
		}
	}
	for in, want := range map[time.Duration]string{time.Minute: "1m", time.Hour: "1h", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s", 24 * time.Hour: "24h"} {
		if got := Duration(in); got != want {
			t.Errorf("Duration(%v): got %q, want %q", in, got, want)
		}
	}
}

func TestTableAlignsTextLeftAndNumbersRight(t *testing.T) {
	tb := &Table{Left: 1, Header: []string{"name", "count"}}
	tb.Add("a", "1,000")
	tb.Add("longer", "7")
	var b bytes.Buffer
	tb.Write(&b, false)
	want := "name    count\na       1,000\nlonger      7\n\n"
	if got := b.String(); got != want {
		t.Fatalf("aligned:\n%q\nwant\n%q", got, want)
	}
	b.Reset()
	tb.Write(&b, true)
	if got := b.String(); !strings.HasPrefix(got, "| name | count |\n| --- | ---: |\n| a | 1,000 |\n") {
		t.Fatalf("markdown:\n%s", got)
	}
}
