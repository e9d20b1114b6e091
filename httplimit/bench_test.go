package httplimit

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/storememory"
)

// BenchmarkMiddleware measures what the middleware adds to a request on the
// memory store: the key, the decision and the headers, with the default
// decision timeout (a context.WithTimeout around the decision) and without.
func BenchmarkMiddleware(b *testing.B) {
	for _, bc := range []struct {
		name    string
		timeout time.Duration
	}{{"timeout=500ms", defaultTimeout}, {"timeout=none", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			l, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1e6), Burst: 1e6})
			if err != nil {
				b.Fatal(err)
			}
			m, err := New(l, WithTimeout(bc.timeout))
			if err != nil {
				b.Fatal(err)
			}
			h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = "192.0.2.1:1"
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}

// The decision timeout costs a context.WithTimeout, not a goroutine and a
// channel per request: at most 5 allocations more than no timeout, as
// AllocsPerRun counts them (the goroutine per decision it replaced cost 8
// more by this count).
func TestTimeoutAddsNoGoroutine(t *testing.T) {
	allocs := map[time.Duration]float64{}
	for _, timeout := range []time.Duration{defaultTimeout, 0} {
		l, err := ratewise.New(storememory.New(), algorithms.GCRA{Rate: algorithms.PerSecond(1e6), Burst: 1e6})
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(l, WithTimeout(timeout))
		if err != nil {
			t.Fatal(err)
		}
		h := m.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "192.0.2.1:1"
		allocs[timeout] = testing.AllocsPerRun(200, func() { h.ServeHTTP(httptest.NewRecorder(), r) })
	}
	if extra := allocs[defaultTimeout] - allocs[0]; extra > 5 {
		t.Errorf(
			"the timeout costs %.0f allocations per request (%.0f against %.0f without)",
			extra,
			allocs[defaultTimeout],
			allocs[0],
		)
	}
}
