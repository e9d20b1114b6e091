package grpclimit

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/ratewisetest"
	"github.com/ratewise/ratewise/storememory"
)

// retryDelay is the RetryInfo detail of err's status, and whether it has
// one.
func retryDelay(err error) (time.Duration, bool) {
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// trailers are the rate-limit trailers a test checks, "" for absent.
type trailers struct{ policy, rateLimit, retryAfter string }

func trailersOf(md metadata.MD) trailers {
	get := func(k string) string {
		v := md.Get(k)
		if len(v) == 0 {
			return ""
		}
		s := v[0]
		for _, more := range v[1:] {
			s += ", " + more
		}
		return s
	}
	return trailers{get("ratelimit-policy"), get("ratelimit"), get("retry-after")}
}

// Calls under the limit pass with the RateLimit trailers; the next is
// ResourceExhausted with a RetryInfo of exactly the wait, a retry-after
// trailer of its seconds, and the trailers of the denial; once the wait has
// passed, the call is admitted again. The peer's address, without its
// port, is the key.
func TestAdmitThenDeny(t *testing.T) {
	clock := ratewisetest.NewClock(start)
	l := newLimiter(t, algorithms.SlidingLog{Limit: 2, Window: time.Minute}, clock)
	in, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, in)
	policy := `"default";q=2;w=60`
	for i, want := range []struct {
		advance time.Duration
		code    codes.Code
		trailers
		retry time.Duration
	}{
		{0, codes.OK, trailers{policy, `"default";r=1;t=60`, ""}, 0},
		{20 * time.Second, codes.OK, trailers{policy, `"default";r=0;t=60`, ""}, 0},
		{0, codes.ResourceExhausted, trailers{policy, `"default";r=0;t=60`, "40"}, 40 * time.Second},
		{40 * time.Second, codes.OK, trailers{policy, `"default";r=0;t=60`, ""}, 0}, // the wait was honest
	} {
		clock.Advance(want.advance)
		md, err := call(t, c)
		if got := status.Code(err); got != want.code {
			t.Fatalf("call %d: code %v (%v), want %v", i+1, got, err, want.code)
		}
		if got := trailersOf(md); got != want.trailers {
			t.Fatalf("call %d: trailers %+v, want %+v", i+1, got, want.trailers)
		}
		if got, ok := retryDelay(err); got != want.retry || ok != (want.retry > 0) {
			t.Fatalf("call %d: RetryInfo %v (%v), want %v", i+1, got, ok, want.retry)
		}
	}
	res, err := l.PeekN(context.Background(), "ip:127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining != 0 {
		t.Fatalf("the peer's key ip:127.0.0.1 has %d left, want 0: the calls were not keyed by the peer", res.Remaining)
	}
}

// The stream interceptor charges a stream once, when it opens: an admitted
// stream runs and ends with the RateLimit trailers; a denied one ends
// before the handler with ResourceExhausted, a RetryInfo and the trailers.
func TestStream(t *testing.T) {
	clock := ratewisetest.NewClock(start)
	in, err := New(newLimiter(t, algorithms.FixedWindow{Limit: 1, Window: time.Minute}, clock))
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, in)
	watch := func() (*healthpb.HealthCheckResponse, metadata.MD, error) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		stream, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			return nil, nil, err
		}
		resp, err := stream.Recv()
		if err == nil {
			// The health server watches until the client leaves.
			cancel()
			for err == nil {
				_, err = stream.Recv()
			}
			if status.Code(err) != codes.Canceled {
				return nil, nil, err
			}
			err = nil
		}
		return resp, stream.Trailer(), err
	}
	resp, _, err := watch()
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first stream: %v, %v; want SERVING", resp, err)
	}
	_, md, err := watch()
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("second stream: %v, want ResourceExhausted", err)
	}
	if d, ok := retryDelay(err); !ok || d != time.Minute {
		t.Fatalf("second stream: RetryInfo %v (%v), want 1m0s", d, ok)
	}
	want := trailers{`"default";q=1;w=60`, `"default";r=0;t=60`, "60"}
	if got := trailersOf(md); got != want {
		t.Fatalf("second stream: trailers %+v, want %+v", got, want)
	}
	// The unary call shares the peer's quota.
	if _, err := call(t, c); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a unary call after the stream: %v, want ResourceExhausted", err)
	}
}

// A MultiKey of a limit per API key and one per peer: the trailers name
// each limit as WithQuotaName says and report the binding one, and a call
// one limit denies charges neither. A Stack's limits are named the same
// way.
func TestMultiKeyAndStack(t *testing.T) {
	clock := ratewisetest.NewClock(start)
	s := storememory.New()
	perKey, err := ratewise.New(s, algorithms.SlidingLog{Limit: 1, Window: time.Minute},
		ratewise.WithClock(clock), ratewise.WithNamespace("key"))
	if err != nil {
		t.Fatal(err)
	}
	perPeer, err := ratewise.New(s, algorithms.SlidingLog{Limit: 3, Window: time.Hour},
		ratewise.WithClock(clock), ratewise.WithNamespace("peer"))
	if err != nil {
		t.Fatal(err)
	}
	multi, err := ratewise.NewMultiKey(perKey, perPeer)
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewMultiKey(multi, []KeyFunc{ByMetadata("x-api-key"), ByPeer()},
		WithQuotaName("per-key", "per-peer"))
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, in)
	policy := `"per-key";q=1;w=60, "per-peer";q=3;w=3600`
	for i, want := range []struct {
		key  string
		code codes.Code
		trailers
	}{
		{"k1", codes.OK, trailers{policy, `"per-key";r=0;t=60`, ""}},
		{"k1", codes.ResourceExhausted, trailers{policy, `"per-key";r=0;t=60`, "60"}},
		{"k2", codes.OK, trailers{policy, `"per-key";r=0;t=60`, ""}},
		// k1's denial took nothing from the peer; on a tie the first binds.
		{"k3", codes.OK, trailers{policy, `"per-key";r=0;t=60`, ""}},
		{"k4", codes.ResourceExhausted, trailers{policy, `"per-peer";r=0;t=3600`, "3600"}},
	} {
		md, err := call(t, c, "x-api-key", want.key)
		if got := status.Code(err); got != want.code {
			t.Fatalf("call %d (%s): code %v (%v), want %v", i+1, want.key, got, err, want.code)
		}
		if got := trailersOf(md); got != want.trailers {
			t.Fatalf("call %d (%s): trailers %+v, want %+v", i+1, want.key, got, want.trailers)
		}
	}
	if res, err := perKey.PeekN(context.Background(), "x-api-key:k4", 1); err != nil || res.Remaining != 1 {
		t.Fatalf("k4's own limit: %+v, %v; want 1 left, since the peer's limit denied the call", res, err)
	}

	set, err := ratewise.NewStack(storememory.New(), []algorithms.Algorithm{
		algorithms.GCRA{Rate: algorithms.PerSecond(1), Burst: 2},
		algorithms.SlidingLog{Limit: 3, Window: time.Hour},
	}, ratewise.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range [][]string{{"short", "long"}, {"api"}} {
		in, err := NewStack(set, WithKey(ByMetadata("x-api-key")), WithQuotaName(names...))
		if err != nil {
			t.Fatal(err)
		}
		md, err := call(t, serve(t, in), "x-api-key", names[0])
		want := `"short";q=2;w=2, "long";q=3;w=3600`
		if len(names) == 1 {
			want = `"api-1";q=2;w=2, "api-2";q=3;w=3600`
		}
		if err != nil || trailersOf(md).policy != want {
			t.Fatalf("Stack named %q: %v, ratelimit-policy %q; want %q", names, err, trailersOf(md).policy, want)
		}
	}
}

// Each key builder, with a real client: the method, the peer and a metadata
// value name the quota, and compose.
func TestKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		key  KeyFunc
		md   []string
		want string // the key the call was charged to
	}{
		{"method", ByMethod(), nil, "method:/grpc.health.v1.Health/Check"},
		{"peer", ByPeer(), nil, "ip:127.0.0.1"},
		{"metadata", ByMetadata("X-Api-Key"), []string{"x-api-key", "k:1"}, "x-api-key:k%3A1"},
		{"user", ByUser(func(ctx context.Context) (string, bool) {
			v := metadata.ValueFromIncomingContext(ctx, "x-user")
			return "alice", len(v) == 1 && v[0] == "alice"
		}), []string{"x-user", "alice"}, "user:alice"},
		{
			"composite", Composite(ByMetadata("x-api-key"), ByMethod()), []string{"x-api-key", "k1"},
			"x-api-key:k1:method:/grpc.health.v1.Health/Check",
		},
		{"first of, the first", FirstOf(ByMetadata("x-api-key"), ByPeer()), []string{"x-api-key", "k1"}, "x-api-key:k1"},
		{"first of, the next", FirstOf(ByMetadata("x-api-key"), ByPeer()), nil, "ip:127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLimiter(t, algorithms.SlidingLog{Limit: 5, Window: time.Minute}, ratewisetest.NewClock(start))
			in, err := New(l, WithKey(c.key))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := call(t, serve(t, in), c.md...); err != nil {
				t.Fatal(err)
			}
			if res, err := l.PeekN(context.Background(), c.want, 1); err != nil || res.Remaining != 4 {
				t.Fatalf("key %q: %+v, %v; want 4 left: the call was charged to another key", c.want, res, err)
			}
		})
	}
}

// A call no KeyFunc can name fails with Internal, which the OnError hook
// hears of, unless WithNoKey chose its answer: then it gets that code, or
// goes through unlimited, and the hook hears nothing.
func TestNoKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []Option
		code  codes.Code
		heard int
	}{
		{"default", nil, codes.Internal, 3},
		{"Unauthenticated", []Option{WithNoKey(codes.Unauthenticated)}, codes.Unauthenticated, 0},
		{"unlimited", []Option{WithNoKey(NoKeyUnlimited)}, codes.OK, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &hook{}
			l := newLimiter(t, algorithms.FixedWindow{Limit: 1, Window: time.Minute}, ratewisetest.NewClock(start))
			in, err := New(l, append(c.opts, WithKey(ByMetadata("x-api-key")), WithOnError(h.record))...)
			if err != nil {
				t.Fatal(err)
			}
			cl := serve(t, in)
			for i := range 3 { // more than the limit: never counted
				md, err := call(t, cl)
				if status.Code(err) != c.code || len(md.Get("ratelimit")) != 0 {
					t.Fatalf("call %d: %v, trailers %v; want %v and no ratelimit", i+1, err, md, c.code)
				}
			}
			heard := h.heard()
			if len(heard) != c.heard || c.heard > 0 && !errors.Is(heard[0], ErrNoKey) {
				t.Fatalf("the hook heard %v, want %d errors matching ErrNoKey", heard, c.heard)
			}
		})
	}
}
