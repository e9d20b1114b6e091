package main

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

var update = flag.Bool("update", false, "rewrite the transcripts in docs/http.md with what curl prints now")

// docs/http.md shows curl talking to this server. This test runs every
// "$ curl" line in the doc's console blocks against a fresh server, in
// order, and requires curl's output to be what the doc says, less the Date
// header.
func TestDocsTranscripts(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("curl is not installed; CI installs it (.ci/run)")
		}
		t.Skip("curl is not installed: docs/http.md's transcripts are not checked")
	}
	h, err := newServer(storememory.New(), ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	path := filepath.Join("..", "..", "docs", "http.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	var out []string
	commands := 0
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		if lines[i] != "```console" {
			continue
		}
		// A console block: commands, each followed by its output.
		for i+1 < len(lines) && lines[i+1] != "```" {
			i++
			cmd, ok := strings.CutPrefix(lines[i], "$ ")
			if !ok {
				t.Fatalf("%s:%d: output without a command", path, i+1)
			}
			out = append(out, lines[i])
			var want []string
			for i+1 < len(lines) && lines[i+1] != "```" && !strings.HasPrefix(lines[i+1], "$ ") {
				i++
				want = append(want, lines[i])
			}
			got := runCurl(t, curl, cmd, srv.URL)
			commands++
			if *update {
				out = append(out, got...)
				continue
			}
			out = append(out, want...)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf(
					"%s:%d: %s\ngot:\n%s\nthe doc says:\n%s",
					path,
					i+1,
					cmd,
					strings.Join(got, "\n"),
					strings.Join(want, "\n"),
				)
			}
		}
	}
	if commands == 0 {
		t.Fatalf("%s has no curl transcripts", path)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runCurl runs a doc's curl command line against base instead of
// http://localhost:8080 and returns its output lines, less Date.
func runCurl(t *testing.T, curl, cmdline, base string) []string {
	t.Helper()
	args := shellWords(t, cmdline)
	if len(args) == 0 || args[0] != "curl" {
		t.Fatalf("not a curl command: %s", cmdline)
	}
	for i, a := range args {
		args[i] = strings.Replace(a, "http://localhost:8080", base, 1)
	}
	out, err := exec.Command(curl, args[1:]...).Output()
	if err != nil {
		t.Fatalf("%s: %v", cmdline, err)
	}
	var lines []string
	for _, l := range strings.Split(string(bytes.ReplaceAll(out, []byte("\r\n"), []byte("\n"))), "\n") {
		if !strings.HasPrefix(l, "Date: ") {
			lines = append(lines, l)
		}
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// shellWords splits a command line on spaces, keeping single-quoted words
// whole; the docs need no more of a shell than that.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
			in = true
		case r == ' ' && !quoted:
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The same server on a real Redis: the limits hold across two instances
// sharing it, as they would behind a load balancer.
func TestServerOnRedis(t *testing.T) {
	srv := redistest.Standalone(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	clock := ratewisetest.NewClock(time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC))
	// A prefix of the test's own keeps reruns on the shared server apart.
	s := storeredis.New(
		rdb,
		storeredis.WithKeyPrefix(fmt.Sprintf("httpserver-test-%d:", time.Now().UnixNano())),
		storeredis.WithClientTime(),
	)
	var instances []http.Handler
	for range 2 {
		h, err := newServer(s, clock, nil)
		if err != nil {
			t.Fatal(err)
		}
		instances = append(instances, h)
	}
	var codes []int
	for i := range 4 {
		r := httptest.NewRequest("GET", "/hello", nil)
		r.Header.Set("X-User", "carol")
		w := httptest.NewRecorder()
		instances[i%2].ServeHTTP(w, r)
		codes = append(codes, w.Code)
	}
	if fmt.Sprint(codes) != "[200 200 200 429]" {
		t.Fatalf("4 requests over 2 instances: %v, want [200 200 200 429]", codes)
	}
}
