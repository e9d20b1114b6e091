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
// decision timeout (which runs the decision in a goroutine) and without.
func BenchmarkMiddleware(b *testing.B) {
	for _, bc := range []struct {
		name    string
		timeout time.Duration
	}{{"timeout=500ms", DefaultTimeout}, {"timeout=none", 0}} {
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
