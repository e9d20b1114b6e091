package storeredis

import (
	"errors"
	"testing"
	"time"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/store"
)

func TestParseReply(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  algorithms.Result
		ok    bool
	}{
		{"admitted", []any{int64(1), int64(4), int64(0), int64(1500)}, algorithms.Result{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 1500 * time.Microsecond}, true},
		{"denied", []any{int64(0), int64(0), int64(7), int64(9)}, algorithms.Result{Limit: 5, RetryAfter: 7 * time.Microsecond, ResetAfter: 9 * time.Microsecond}, true},
		{"nil", nil, algorithms.Result{}, false},
		{"not an array", "OK", algorithms.Result{}, false},
		{"three fields", []any{int64(1), int64(4), int64(0)}, algorithms.Result{}, false},
		{"five fields", []any{int64(1), int64(4), int64(0), int64(0), int64(0)}, algorithms.Result{}, false},
		{"string field", []any{"1", int64(4), int64(0), int64(0)}, algorithms.Result{}, false},
		{"allowed 2", []any{int64(2), int64(4), int64(0), int64(0)}, algorithms.Result{}, false},
		{"negative remaining", []any{int64(1), int64(-1), int64(0), int64(0)}, algorithms.Result{}, false},
		{"remaining above limit", []any{int64(1), int64(6), int64(0), int64(0)}, algorithms.Result{}, false},
		{"allowed with a wait", []any{int64(1), int64(4), int64(3), int64(0)}, algorithms.Result{}, false},
		{"denied without a wait", []any{int64(0), int64(0), int64(0), int64(5)}, algorithms.Result{}, false},
		{"negative reset", []any{int64(1), int64(4), int64(0), int64(-5)}, algorithms.Result{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseReply(tt.reply, 5)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("parseReply = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, ErrMalformedReply) || got.Allowed {
				t.Fatalf("parseReply = %+v, %v; want ErrMalformedReply and not allowed", got, err)
			}
		})
	}
}
