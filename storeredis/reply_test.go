package storeredis

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

func TestParseReply(t *testing.T) {
	const at = int64(1_780_000_000_000_000)
	i := func(v ...int64) []any {
		out := make([]any, len(v))
		for j, n := range v {
			out[j] = n
		}
		return out
	}
	tests := []struct {
		name  string
		reply any
		want  algorithms.Result
		ok    bool
	}{
		{
			"admitted",
			i(1, 4, 0, 1500, at),
			algorithms.Result{
				Allowed:    true,
				Limit:      5,
				Remaining:  4,
				ResetAfter: 1500 * time.Microsecond,
				At:         time.UnixMicro(at),
			},
			true,
		},
		{
			"denied",
			i(0, 0, 7, 9, at),
			algorithms.Result{
				Limit:      5,
				RetryAfter: 7 * time.Microsecond,
				ResetAfter: 9 * time.Microsecond,
				At:         time.UnixMicro(at),
			},
			true,
		},
		{
			"decided after now",
			i(1, 4, 0, 1500, at+5),
			algorithms.Result{
				Allowed:    true,
				Limit:      5,
				Remaining:  4,
				ResetAfter: 1500 * time.Microsecond,
				At:         time.UnixMicro(at + 5),
			},
			true,
		},
		{"nil", nil, algorithms.Result{}, false},
		{"not an array", "OK", algorithms.Result{}, false},
		{"four fields", i(1, 4, 0, 0), algorithms.Result{}, false},
		{"six fields", i(1, 4, 0, 0, at, 0), algorithms.Result{}, false},
		{"string field", []any{"1", int64(4), int64(0), int64(0), at}, algorithms.Result{}, false},
		{"allowed 2", i(2, 4, 0, 0, at), algorithms.Result{}, false},
		{"negative remaining", i(1, -1, 0, 0, at), algorithms.Result{}, false},
		{"remaining above limit", i(1, 6, 0, 0, at), algorithms.Result{}, false},
		{"allowed with a wait", i(1, 4, 3, 0, at), algorithms.Result{}, false},
		{"denied without a wait", i(0, 0, 0, 5, at), algorithms.Result{}, false},
		{"negative reset", i(1, 4, 0, -5, at), algorithms.Result{}, false},
		{"decided before now", i(1, 4, 0, 0, at-1), algorithms.Result{}, false},
		{"negative time", i(1, 4, 0, 0, -1), algorithms.Result{}, false},
		{"negative time in server-time mode", i(1, 4, 0, 0, -1), algorithms.Result{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notBefore := at
			if strings.HasSuffix(tt.name, "server-time mode") {
				notBefore = 0 // the server's clock: any time from the epoch on
			}
			// Through the parse step, as every op's reply is read.
			var got algorithms.Result
			err := parse(parserFunc(func(reply any) (err error) {
				got, err = parseReply(reply, 5, notBefore)
				return err
			}), tt.reply)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("parseReply = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, errMalformedReply) || got.Allowed {
				t.Fatalf("parseReply = %+v, %v; want errMalformedReply and not allowed", got, err)
			}
		})
	}
}

// parserFunc is a parser made of a function.
type parserFunc func(reply any) error

func (f parserFunc) parse(reply any) error { return f(reply) }
