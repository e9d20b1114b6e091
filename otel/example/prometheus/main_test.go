package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// start serves on a free port until the test ends, and returns the base
// URL.
func start(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serve did not return after its context ended")
		}
	})
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// The requests the limited endpoint admitted and denied over HTTP are
// what GET /metrics reports, in ratewise_decisions_total by outcome, and
// every decision's store duration is in the histogram.
func TestMetricsEndpoint(t *testing.T) {
	base := start(t)
	client := &http.Client{Timeout: 5 * time.Second}

	const requests = 8 // limit admits 5 at once
	codes := map[int]int64{}
	for range requests {
		code, _ := get(t, client, base+"/")
		codes[code]++
	}
	allowed, denied := codes[http.StatusOK], codes[http.StatusTooManyRequests]
	// The burst of 5 at once; the next token comes 12 s later.
	if allowed != limit.Burst || denied != requests-limit.Burst {
		t.Fatalf("responses: %v, want %d 200s, then 429s", codes, limit.Burst)
	}

	code, body := get(t, client, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, body)
	}

	decisions := families["ratewise_decisions_total"]
	if decisions == nil || decisions.GetType() != dto.MetricType_COUNTER {
		t.Fatalf("no counter ratewise_decisions_total in\n%s", body)
	}
	got := map[string]float64{}
	for _, m := range decisions.GetMetric() {
		l := labels(m)
		if l["ratewise_algorithm"] != "gcra" || l["ratewise_source"] != "limiter" || l["ratewise_peek"] != "false" ||
			l["ratewise_binding"] != "0" {
			t.Errorf("unexpected series %v", l)
		}
		got[l["ratewise_outcome"]] += m.GetCounter().GetValue()
	}
	if got["allowed"] != float64(allowed) || got["denied"] != float64(denied) || len(got) != 2 {
		t.Errorf("ratewise_decisions_total by outcome: %v, want allowed %d, denied %d (the responses)", got, allowed, denied)
	}

	durations := families["ratewise_store_duration_seconds"]
	if durations == nil || durations.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no histogram ratewise_store_duration_seconds in\n%s", body)
	}
	var count uint64
	for _, m := range durations.GetMetric() {
		count += m.GetHistogram().GetSampleCount()
	}
	if count != requests {
		t.Errorf("ratewise_store_duration_seconds count: %d, want %d", count, requests)
	}
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}
