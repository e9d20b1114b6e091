package grpclimit

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/store"
	"github.com/ratewise/ratewise/storememory"
)

// Every test leaves no goroutine behind: servers, clients and streams all
// end with their test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start is the tests' fixed clock's first reading.
var start = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// newLimiter returns a limiter of alg on the memory store, on clock.
func newLimiter(t *testing.T, alg algorithms.Algorithm, clock *ratewisetest.Clock) *ratewise.Limiter {
	t.Helper()
	l, err := ratewise.New(storememory.New(), alg, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// serve starts a health server behind in on 127.0.0.1 and returns a client
// connected to it; both end with the test.
func serve(t *testing.T, in *Interceptor) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(in.Unary()), grpc.StreamInterceptor(in.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// call makes one Check call with the metadata pairs md ("x-api-key", "k1")
// and returns its trailers and error.
func call(t *testing.T, c healthpb.HealthClient, md ...string) (metadata.MD, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	var trailer metadata.MD
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
	return trailer, err
}

// failingStore fails every operation with err, as a store whose server
// has gone away does.
type failingStore struct{ err error }

var _ store.Store = failingStore{}

func (s failingStore) Decide(context.Context, store.Key, algorithms.Algorithm, time.Time, int64) (
	algorithms.Result, error,
) {
	return algorithms.Result{}, s.err
}

func (s failingStore) DecideSet(context.Context, store.Key, []algorithms.Algorithm, time.Time, int64) (
	[]algorithms.Result, error,
) {
	return nil, s.err
}

func (s failingStore) Reserve(context.Context, store.Key, algorithms.Algorithm, time.Time, int64, time.Duration) (
	algorithms.Result, time.Duration, error,
) {
	return algorithms.Result{}, 0, s.err
}

func (s failingStore) Refund(context.Context, store.Key, algorithms.Algorithm, time.Time, time.Time, int64) (
	algorithms.Result, error,
) {
	return algorithms.Result{}, s.err
}

func (s failingStore) Lease(context.Context, store.Key, algorithms.Algorithm, time.Time, int64, time.Duration) (
	algorithms.Result, time.Duration, error,
) {
	return algorithms.Result{}, 0, s.err
}

func (s failingStore) Reset(context.Context, store.Key, algorithms.Algorithm) error { return s.err }

func (failingStore) Capabilities() store.Capabilities { return store.Capabilities{} }

// silentStore never answers a decision: it waits until the decision's
// context ends, as a store behind a stalled network does, and then fails
// as a store that honours its context does.
type silentStore struct{ failingStore }

func (silentStore) Decide(ctx context.Context, _ store.Key, _ algorithms.Algorithm, _ time.Time, _ int64) (
	algorithms.Result, error,
) {
	<-ctx.Done()
	return algorithms.Result{}, ctx.Err()
}

// hook records what the OnError hook hears.
type hook struct {
	mu   sync.Mutex
	errs []error
}

func (h *hook) record(_ context.Context, _ string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, err)
}

func (h *hook) heard() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.errs...)
}

// degraded records what the observer hears.
type degraded struct {
	mu     sync.Mutex
	events []DegradedEvent
}

func (d *degraded) observe(_ context.Context, e DegradedEvent) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.events = append(d.events, e)
}

func (d *degraded) all() []DegradedEvent {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]DegradedEvent(nil), d.events...)
}
