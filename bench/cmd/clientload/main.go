// Command clientload measures whether a go-redis client built with
// storeredis.ClientOptions fails decisions under modest load: it starts a
// throwaway redis-server, builds a limiter on
// storeredis.New(redis.NewClient(storeredis.ClientOptions(..., budget))) for
// GCRA and for a sliding log, with limits that admit every request, and has
// parallel callers make a fixed number of requests on one hot key, as
// parallel curls from one address do. Each request goes through httplimit
// over a real HTTP listener (its defaults: a 500ms timeout per decision,
// 503 when the store fails), or straight to Limiter.Allow under a context
// of httplimit's timeout. It prints a table of failed requests and latency,
// and the errors the failed ones met.
//
// Each cell builds a new client and store, so that the pool dials its
// connections while the callers run, as in a service just started. -hogs
// starts processes that spin on a core each, to measure on a busy host.
// -read, -pool, -dial and -poolsize override the options ClientOptions
// sets, to compare other settings.
//
//	go run ./bench/cmd/clientload [-budget 0] [-n 10000] [-callers 8,64] [-hogs 0,1,2] [-via http,direct]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/httplimit"
	"github.com/ratewise/ratewise/internal/testkit/redisinfo"
	"github.com/ratewise/ratewise/internal/testkit/redistest"
	"github.com/ratewise/ratewise/storeredis"
)

// spinEnv, set in a child's environment, makes this command spin on one
// core until it is killed: a hog.
const spinEnv = "RATEWISE_CLIENTLOAD_SPIN"

// decisionTimeout is httplimit's default timeout for a decision, which the
// direct callers use too.
const decisionTimeout = 500 * time.Millisecond

type config struct {
	budget                 time.Duration
	n                      int
	read, pool, dial       time.Duration // 0: as ClientOptions sets them
	poolSize               int           // 0: go-redis's default
	callers, hogs          []int
	via                    []string
	keepAlive, coalescing  bool
	redisVersion, settings string
}

// limits are the algorithms measured, with limits no run reaches, so that
// every decision admits and writes: the most a decision costs Redis.
var limits = []struct {
	name string
	alg  algorithms.Algorithm
}{
	{"GCRA", algorithms.GCRA{Rate: algorithms.PerSecond(1_000_000), Burst: 1_000_000}},
	{"sliding log", algorithms.SlidingLog{Limit: 1_000_000, Window: time.Minute}},
}

func main() {
	if os.Getenv(spinEnv) != "" {
		spin()
	}
	redis.SetLogger(quiet{}) // its failed dials are counted in the table
	var c config
	flag.DurationVar(&c.budget, "budget", 0, "the budget passed to storeredis.ClientOptions (0: its default)")
	flag.IntVar(&c.n, "n", 10000, "requests per cell, shared by its callers")
	callers := flag.String("callers", "8,64", "numbers of parallel callers, comma-separated")
	hogs := flag.String("hogs", "0,1,2", "numbers of spinning processes to run beside, comma-separated")
	via := flag.String("via", "http", `"http" (httplimit over a listener), "direct" (Limiter.Allow), or both`)
	flag.DurationVar(&c.read, "read", 0, "ReadTimeout and WriteTimeout in place of ClientOptions's")
	flag.DurationVar(&c.pool, "pool", 0, "PoolTimeout in place of ClientOptions's")
	flag.DurationVar(&c.dial, "dial", 0, "DialTimeout in place of ClientOptions's")
	flag.IntVar(&c.poolSize, "poolsize", 0, "PoolSize (0: go-redis's default, 10 per CPU)")
	flag.BoolVar(&c.keepAlive, "keepalive", false, "reuse HTTP connections (default: one per request, as curl)")
	flag.BoolVar(&c.coalescing, "coalescing", true, "leave storeredis.WithCoalescing at its default (false: off)")
	flag.Parse()
	var err error
	if c.callers, err = counts(*callers); err == nil {
		if c.hogs, err = counts(*hogs); err == nil {
			err = run(&c, strings.Split(*via, ","))
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clientload:", err)
		os.Exit(2)
	}
}

func counts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// quiet is a go-redis logger that logs nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// spin keeps one core busy until the process is killed.
func spin() {
	x := uint64(1)
	for {
		x = x*6364136223846793005 + 1442695040888963407
		if x == 0 {
			fmt.Print()
		}
	}
}

func run(c *config, via []string) error {
	for _, v := range via {
		if v != "http" && v != "direct" {
			return fmt.Errorf("-via %q: want http, direct or both", v)
		}
	}
	c.via = via
	srv, err := redistest.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer admin.Close()
	ctx := context.Background()
	info, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	c.redisVersion = redisinfo.Field(info, "redis_version")
	o := c.options(srv.Addr)
	c.settings = fmt.Sprintf(
		"ReadTimeout %v, WriteTimeout %v, PoolTimeout %v, DialTimeout %v, DialerRetries %d, DialerRetryTimeout %v, "+
			"MaxRetries %d, PoolSize %s",
		o.ReadTimeout, o.WriteTimeout, o.PoolTimeout, o.DialTimeout, o.DialerRetries, o.DialerRetryTimeout,
		o.MaxRetries, poolSize(o.PoolSize),
	)
	budget := c.budget.String()
	if c.budget <= 0 {
		budget = fmt.Sprintf("0: ClientOptions's default, %v", c.effectiveBudget())
	}
	fmt.Printf("Redis %s, %d cores, budget %s (%s), %d requests per cell on one hot key, HTTP keep-alive %s, "+
		"coalescing %s; `%s`\n\n",
		c.redisVersion, runtime.NumCPU(), budget, c.settings, c.n, onOff(c.keepAlive), onOff(c.coalescing),
		strings.Join(append([]string{"go run ./bench/cmd/clientload"}, os.Args[1:]...), " "))
	fmt.Println("| hogs | via | algorithm | callers | failed | p50 | p99 | max | requests/s |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	reasons := map[string]int{}
	for _, h := range c.hogs {
		stop, err := startHogs(h)
		if err != nil {
			return err
		}
		for _, v := range c.via {
			for _, lim := range limits {
				for _, n := range c.callers {
					if err := admin.FlushAll(ctx).Err(); err != nil {
						stop()
						return err
					}
					r, err := c.cell(srv.Addr, v, lim.alg, n)
					if err != nil {
						stop()
						return err
					}
					for reason, count := range r.reasons {
						reasons[reason] += count
					}
					fmt.Printf("| %d | %s | %s | %d | %d of %d | %v | %v | %v | %.0f |\n", h, v, lim.name,
						n, r.failed, c.n, r.p50, r.p99, r.max, r.perSecond)
				}
			}
		}
		stop()
	}
	if len(reasons) > 0 {
		fmt.Println("\nWhat the failed requests met:")
		keys := make([]string, 0, len(reasons))
		for k := range reasons {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Printf("- %d × %s\n", reasons[k], k)
		}
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func poolSize(n int) string {
	if n == 0 {
		return fmt.Sprintf("go-redis's default (%d)", 10*runtime.GOMAXPROCS(0))
	}
	return strconv.Itoa(n)
}

// options are the client's options: ClientOptions's, and the overrides.
func (c *config) options(addr string) *redis.Options {
	o := storeredis.ClientOptions(&redis.Options{Addr: addr, PoolSize: c.poolSize}, c.budget)
	if c.read > 0 {
		o.ReadTimeout, o.WriteTimeout = c.read, c.read
	}
	if c.pool > 0 {
		o.PoolTimeout = c.pool
	}
	if c.dial > 0 {
		o.DialTimeout = c.dial
	}
	return o
}

// effectiveBudget is the budget ClientOptions sets timeouts for, whose
// ReadTimeout it is: -budget, or its default for 0.
func (c *config) effectiveBudget() time.Duration {
	return storeredis.ClientOptions(&redis.Options{}, c.budget).ReadTimeout
}

// startHogs starts n processes that spin, and returns what stops them.
func startHogs(n int) (func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	stop := func() {
		for _, cmd := range cmds {
			cmd.Process.Kill() // by the PID this command started
			cmd.Wait()
		}
	}
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), spinEnv+"=1")
		killWithParent(cmd)
		if err := cmd.Start(); err != nil {
			stop()
			return nil, err
		}
		cmds = append(cmds, cmd)
	}
	return stop, nil
}

// result is what one cell measured.
type result struct {
	failed         int
	p50, p99, max  time.Duration
	perSecond      float64
	reasons        map[string]int
	reasonsMu      sync.Mutex
	latencies      []time.Duration
	latenciesMu    sync.Mutex
	remaining      atomic.Int64
	failedRequests atomic.Int64
}

func (r *result) failure(err error) {
	r.reasonsMu.Lock()
	defer r.reasonsMu.Unlock()
	r.reasons[reason(err)]++
}

// reason is a failure's kind, without what differs from one to the next
// (addresses, ports).
func reason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "the decision's context ended (httplimit's 500ms timeout)"
	case errors.Is(err, redis.ErrPoolTimeout):
		return "go-redis: connection pool timeout (PoolTimeout)"
	case strings.Contains(err.Error(), "dial tcp") && strings.Contains(err.Error(), "i/o timeout"):
		return "a dial timed out (DialTimeout)"
	case errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "i/o timeout"):
		return "a read or write timed out (ReadTimeout, WriteTimeout)"
	}
	return err.Error()
}

// cell runs c.n requests from callers goroutines through a new client,
// store and limiter.
func (c *config) cell(addr, via string, alg algorithms.Algorithm, callers int) (*result, error) {
	rdb := redis.NewClient(c.options(addr))
	defer rdb.Close()
	var opts []storeredis.Option
	if !c.coalescing {
		opts = append(opts, storeredis.WithCoalescing(0))
	}
	var warned []error
	opts = append(opts, storeredis.WithWarnings(c.effectiveBudget(), func(err error) { warned = append(warned, err) }))
	s := storeredis.New(rdb, opts...)
	defer s.Close()
	if len(warned) > 0 && c.read == 0 && c.pool == 0 && c.dial == 0 {
		return nil, fmt.Errorf("ClientOptions's client warned: %v", errors.Join(warned...))
	}
	l, err := ratewise.New(s, alg)
	if err != nil {
		return nil, err
	}
	r := &result{reasons: map[string]int{}}
	r.remaining.Store(int64(c.n))
	var request func() bool
	switch via {
	case "http":
		stop, req, err := serve(l, r, c.keepAlive, callers)
		if err != nil {
			return nil, err
		}
		defer stop()
		request = req
	default:
		request = func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), decisionTimeout)
			defer cancel()
			if _, err := l.Allow(ctx, "client:1"); err != nil {
				r.failure(err)
				return false
			}
			return true
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			var lat []time.Duration
			for r.remaining.Add(-1) >= 0 {
				t := time.Now()
				if !request() {
					r.failedRequests.Add(1)
				}
				lat = append(lat, time.Since(t))
			}
			r.latenciesMu.Lock()
			r.latencies = append(r.latencies, lat...)
			r.latenciesMu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(r.latencies)
	all := r.latencies
	r.failed = int(r.failedRequests.Load())
	r.p50 = all[len(all)/2].Round(10 * time.Microsecond)
	r.p99 = all[len(all)*99/100].Round(10 * time.Microsecond)
	r.max = all[len(all)-1].Round(10 * time.Microsecond)
	r.perSecond = float64(len(all)) / elapsed.Seconds()
	return r, nil
}

// serve starts an HTTP server limited by httplimit with its defaults on l,
// and returns what stops it and one request to it, which reports whether
// the request was decided (200 or 429; a 503 is a failure, whose error the
// middleware's OnError hook gives r).
func serve(l *ratewise.Limiter, r *result, keepAlive bool, callers int) (func(), func() bool, error) {
	mw, err := httplimit.New(l, httplimit.WithOnError(func(_ *http.Request, err error) { r.failure(err) }))
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))}
	go srv.Serve(ln)
	tr := &http.Transport{DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: callers}
	client := &http.Client{Transport: tr}
	url := "http://" + ln.Addr().String() + "/"
	stop := func() {
		tr.CloseIdleConnections()
		srv.Close()
	}
	request := func() bool {
		resp, err := client.Get(url)
		if err != nil {
			r.failure(fmt.Errorf("the HTTP request: %w", err))
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusTooManyRequests
	}
	return stop, request, nil
}
