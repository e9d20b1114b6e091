// Command prometheus serves an endpoint limited by ratewise and the
// limiter's metrics for Prometheus to scrape: GET / answers 5 requests a
// minute per client and 429 Too Many Requests past that, and GET /metrics
// exposes ratewise_decisions_total, ratewise_store_duration_seconds and
// ratewise_http_degraded_requests_total in the Prometheus text format.
//
// Run it from the otel module's directory:
//
//	go run ./example/prometheus -addr 127.0.0.1:9464
//	for i in 1 2 3 4 5 6 7; do curl -s -o /dev/null -w '%{http_code}\n' http://127.0.0.1:9464/; done
//	curl -s http://127.0.0.1:9464/metrics | grep ratewise_decisions_total
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	ratewiseotel "github.com/ratewise/ratewise/otel"
	"github.com/ratewise/ratewise/storememory"
)

// limit is what each client may do on GET /.
var limit = algorithms.GCRA{Rate: algorithms.PerMinute(5), Burst: 5}

func main() {
	addr := flag.String("addr", "127.0.0.1:9464", "address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("serving http://%s/ (%v per client) and http://%s/metrics", ln.Addr(), limit, ln.Addr())
	if err := serve(ctx, ln); err != nil {
		log.Fatal(err)
	}
}

// serve answers on ln until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, ln net.Listener) error {
	h, shutdown, err := newHandler()
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return errors.Join(err, shutdown(context.Background()))
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), shutdown(sctx))
}

// newHandler returns the routes, GET / limited and GET /metrics, and a
// function that shuts down the meter provider behind them.
func newHandler() (http.Handler, func(context.Context) error, error) {
	// The exporter is a reader of the meter provider that answers each
	// scrape with what the provider holds. It registers with its own
	// registry here, rather than Prometheus's global one, so that several
	// servers can run in one process (in the tests).
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))

	obs, err := ratewiseotel.New(ratewiseotel.WithMeterProvider(mp))
	if err != nil {
		return nil, nil, err
	}
	limiter, err := ratewise.New(
		storememory.New(),
		limit,
		ratewise.WithObserver(obs.ObserveDecision),
		ratewise.WithNamespace("hello"),
	)
	if err != nil {
		return nil, nil, err
	}
	mw, err := httplimit.New(limiter, httplimit.WithObserver(obs.ObserveDegraded), httplimit.WithQuotaName("hello"))
	if err != nil {
		return nil, nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /{$}", mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	})))
	return mux, mp.Shutdown, nil
}
