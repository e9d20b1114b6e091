// Command httpserver is a small HTTP API limited per client IP and per
// user with ratewise's httplimit middleware, on the in-memory store or on a
// real Redis shared by every instance:
//
//	go run ./examples/httpserver                         # in-memory store
//	go run ./examples/httpserver -redis 127.0.0.1:6379   # a real Redis
//
// Every client IP may make 10 requests a minute; every user, named by the
// X-User header (a stand-in for real authentication), 3 a minute; an
// anonymous request counts against its IP in both. docs/http.md shows it
// answering curl.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
	"github.com/ratewise/ratewise/storeredis"
)

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address; empty for the in-memory store")
	proxies := flag.String("trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For is trusted")
	flag.Parse()

	var s store.Store = storememory.New()
	if *redisAddr != "" {
		// A limiter's client (docs/redis.md, "Client settings"): the
		// middleware's 500 ms decision timeout is honoured on the socket,
		// and nothing is retried.
		rdb := redis.NewClient(&redis.Options{
			Addr:                  *redisAddr,
			ContextTimeoutEnabled: true,
			DialTimeout:           150 * time.Millisecond,
			DialerRetries:         1,
			DialerRetryTimeout:    50 * time.Millisecond,
			ReadTimeout:           250 * time.Millisecond,
			WriteTimeout:          250 * time.Millisecond,
			PoolTimeout:           250 * time.Millisecond,
			MaxRetries:            -1,
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := rdb.Ping(ctx).Err(); err != nil {
			log.Fatalf("httpserver: redis at %s: %v", *redisAddr, err)
		}
		s = storeredis.New(rdb)
	}
	var trusted []string
	if *proxies != "" {
		trusted = strings.Split(*proxies, ",")
	}
	h, err := newServer(s, nil, trusted)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("httpserver: listening on http://%s", *addr)
	srv := &http.Server{
		Addr:              *addr,
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       time.Minute,
	}
	log.Fatal(srv.ListenAndServe())
}

// user is the demo's stand-in for authentication: the X-User header.
func user(r *http.Request) (string, bool) {
	u := r.Header.Get("X-User")
	return u, u != ""
}

// newServer returns the API with both limits in front of it. clock is nil
// outside tests.
func newServer(s store.Store, clock interface{ Now() time.Time }, trustedProxies []string) (http.Handler, error) {
	opts := []ratewise.Option{}
	if clock != nil {
		opts = append(opts, ratewise.WithClock(clock))
	}
	perIP, err := ratewise.New(s, algorithms.SlidingWindow{Limit: 10, Window: time.Minute, SubWindows: 6},
		append(opts, ratewise.WithNamespace("api.per-ip"))...)
	if err != nil {
		return nil, err
	}
	perUser, err := ratewise.New(s, algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		append(opts, ratewise.WithNamespace("api.per-user"))...)
	if err != nil {
		return nil, err
	}
	byIP, err := httplimit.ByIP(httplimit.IPConfig{TrustedProxies: trustedProxies})
	if err != nil {
		return nil, err
	}
	ipLimit, err := httplimit.New(perIP, httplimit.WithKey(byIP), httplimit.WithQuotaName("per-ip"))
	if err != nil {
		return nil, err
	}
	userLimit, err := httplimit.New(perUser, httplimit.WithKey(httplimit.FirstOf(httplimit.ByUser(user), byIP)),
		httplimit.WithQuotaName("per-user"))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		name, ok := user(r)
		if !ok {
			name = "anonymous"
		}
		fmt.Fprintf(w, "hello, %s\n", name)
	})
	return ipLimit.Handler(userLimit.Handler(mux)), nil
}
