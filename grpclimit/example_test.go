package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/grpclimit"
	"github.com/ratewise/ratewise/storememory"
)

func ExampleNew() {
	// 2 calls a minute per API key. In production the store is usually
	// storeredis.
	limiter, err := ratewise.New(storememory.New(), algorithms.SlidingLog{Limit: 2, Window: time.Minute},
		ratewise.WithNamespace("grpc.per-key"))
	if err != nil {
		panic(err)
	}
	in, err := grpclimit.New(limiter, grpclimit.WithKey(grpclimit.ByMetadata("x-api-key")),
		grpclimit.WithQuotaName("per-key"))
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(in.Unary()), grpc.StreamInterceptor(in.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k1")
	for range 3 {
		var trailer metadata.MD
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		fmt.Printf("%v ratelimit: %s retry-after: %q\n",
			status.Code(err), trailer.Get("ratelimit"), trailer.Get("retry-after"))
		for _, d := range status.Convert(err).Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				fmt.Println("RetryInfo:", ri.GetRetryDelay().AsDuration().Round(time.Minute))
			}
		}
	}
	// Output:
	// OK ratelimit: ["per-key";r=1;t=60] retry-after: []
	// OK ratelimit: ["per-key";r=0;t=60] retry-after: []
	// ResourceExhausted ratelimit: ["per-key";r=0;t=60] retry-after: ["60"]
	// RetryInfo: 1m0s
}
