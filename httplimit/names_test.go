package httplimit

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// Each limit of a Stack or a MultiKey carries the name WithQuotaName gives
// it, in order, in RateLimit-Policy and RateLimit, and the DegradedEvent's
// Quota is the names joined.
func TestQuotaNamesPerLimit(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	// Each case has limits of its own, so that none sees another's
	// requests.
	multi := func() *ratewise.MultiKey {
		s := storememory.New()
		g, _, _ := newGroup(t, s, s, clock)
		return g
	}
	set := func() *ratewise.Stack {
		set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
			algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
			algorithms.SlidingLog{Limit: 3, Window: time.Hour},
		}, ratewise.WithClock(clock))
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	for _, c := range []struct {
		name     string
		build    func(...Option) (*Middleware, error)
		names    []string
		policies string
		binding  string // RateLimit of the first request
	}{
		{
			"MultiKey",
			func(o ...Option) (*Middleware, error) { return NewMultiKey(multi(), groupKeys, o...) },
			[]string{"per-user", "global"},
			`"per-user";q=2;w=60, "global";q=4;w=3600`,
			`"per-user";r=1;t=60`,
		},
		{
			"Stack",
			func(o ...Option) (*Middleware, error) { return NewStack(set(), o...) },
			[]string{"short", "long"},
			`"short";q=2;w=2, "long";q=3;w=3600`,
			`"short";r=1;t=1`,
		},
		{
			"Stack, one name numbered",
			func(o ...Option) (*Middleware, error) { return NewStack(set(), o...) },
			[]string{"api"},
			`"api-1";q=2;w=2, "api-2";q=3;w=3600`,
			`"api-1";r=1;t=1`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := c.build(WithQuotaName(c.names...))
			if err != nil {
				t.Fatal(err)
			}
			resp := serveAs(m.Handler(ok), "alice")
			got := strings.Join(resp.Header.Values("RateLimit-Policy"), ", ")
			if got != c.policies || resp.Header.Get("RateLimit") != c.binding {
				t.Fatalf("RateLimit-Policy %q, RateLimit %q; want %q, %q",
					got, resp.Header.Get("RateLimit"), c.policies, c.binding)
			}
			if got, want := m.quota, strings.Join(c.names, ","); got != want {
				t.Fatalf("DegradedEvent.Quota %q, want %q", got, want)
			}
		})
	}
}

// Bad names, and a number of names that is neither one nor one per limit,
// fail construction with ratewise.ErrInvalidConfig, never later.
func TestQuotaNamesRejected(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	s := storememory.New()
	multi, perUser, _ := newGroup(t, s, s, clock)
	for _, c := range []struct {
		name  string
		build func(...Option) (*Middleware, error)
		names []string
	}{
		{"no name", func(o ...Option) (*Middleware, error) { return New(perUser, o...) }, nil},
		{"two for a Limiter", func(o ...Option) (*Middleware, error) { return New(perUser, o...) }, []string{"a", "b"}},
		{"empty", func(o ...Option) (*Middleware, error) { return New(perUser, o...) }, []string{""}},
		{"not ASCII", func(o ...Option) (*Middleware, error) { return New(perUser, o...) }, []string{"été"}},
		{"a newline", func(o ...Option) (*Middleware, error) { return New(perUser, o...) }, []string{"a\"\n"}},
		{"three for two", func(o ...Option) (*Middleware, error) {
			return NewMultiKey(multi, groupKeys, o...)
		}, []string{"a", "b", "c"}},
		{"twice", func(o ...Option) (*Middleware, error) {
			return NewMultiKey(multi, groupKeys, o...)
		}, []string{"a", "a"}},
		{"one empty of two", func(o ...Option) (*Middleware, error) {
			return NewMultiKey(multi, groupKeys, o...)
		}, []string{"a", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.build(WithQuotaName(c.names...)); !errors.Is(err, ratewise.ErrInvalidConfig) {
				t.Fatalf("WithQuotaName(%q): got %v, want ratewise.ErrInvalidConfig", c.names, err)
			}
		})
	}
}

// records captures the log records a slog.Handler is given.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec)
	return nil
}

func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }

func (r *records) WithGroup(string) slog.Handler { return r }

func (r *records) warnings() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rec := range r.recs {
		if rec.Level == slog.LevelWarn {
			n++
		}
	}
	return n
}

// A request without a key that WithNoKey answers is no failure: the
// default OnError hook logs no warning for it. Without WithNoKey, it does.
func TestNoKeyLogsNoWarningWhenAnswered(t *testing.T) {
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		name     string
		opts     []Option
		status   int
		warnings int
	}{
		{"WithNoKey(401)", []Option{WithNoKey(http.StatusUnauthorized)}, http.StatusUnauthorized, 0},
		{"NoKeyUnlimited", []Option{WithNoKey(NoKeyUnlimited)}, http.StatusOK, 0},
		{"unanswered", nil, http.StatusInternalServerError, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &records{}
			prev := slog.Default()
			slog.SetDefault(slog.New(rec))
			t.Cleanup(func() { slog.SetDefault(prev) })
			s := storememory.New()
			multi, _, _ := newGroup(t, s, s, clock)
			for _, build := range []func() (*Middleware, error){
				func() (*Middleware, error) {
					return New(newLimiter(t, perUserAlg, clock), append(c.opts, WithKey(byUser))...)
				},
				func() (*Middleware, error) { return NewMultiKey(multi, groupKeys, c.opts...) },
			} {
				m, err := build()
				if err != nil {
					t.Fatal(err)
				}
				if resp := serveAs(m.Handler(ok), ""); resp.StatusCode != c.status {
					t.Fatalf("anonymous request: %d, want %d", resp.StatusCode, c.status)
				}
			}
			if got, want := rec.warnings(), 2*c.warnings; got != want {
				t.Fatalf("%d warnings logged for 2 anonymous requests, want %d", got, want)
			}
		})
	}
}
