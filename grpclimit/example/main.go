// Command example serves the gRPC health service limited per API key and
// per peer with grpclimit: 3 calls a minute for each API key (the
// x-api-key metadata), and 10 a minute for each peer address, whatever
// keys it sends. A call without an API key is refused with
// Unauthenticated.
//
// By default it starts the server on a free port of 127.0.0.1, makes a few
// calls to it, prints what each got, and stops:
//
//	cd grpclimit && GOWORK=off go run ./example
//
// With --serve it keeps serving on --addr instead, for a client of your
// own, such as grpcurl:
//
//	cd grpclimit && GOWORK=off go run ./example --serve --addr 127.0.0.1:50051
//	grpcurl -plaintext -H 'x-api-key: k1' 127.0.0.1:50051 grpc.health.v1.Health/Check
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "the address to serve on")
	serve := flag.Bool("serve", false, "keep serving instead of making a few calls and stopping")
	flag.Parse()
	if err := run(*addr, *serve); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, serve bool) error {
	// One store for both limits; storeredis.New(rdb) shares them between
	// instances.
	s := storememory.New()
	perKey, err := ratewise.New(s, algorithms.SlidingLog{Limit: 3, Window: time.Minute},
		ratewise.WithNamespace("grpc.per-key"))
	if err != nil {
		return err
	}
	perPeer, err := ratewise.New(s, algorithms.SlidingLog{Limit: 10, Window: time.Minute},
		ratewise.WithNamespace("grpc.per-peer"))
	if err != nil {
		return err
	}
	multi, err := ratewise.NewMultiKey(perKey, perPeer)
	if err != nil {
		return err
	}
	in, err := grpclimit.NewMultiKey(multi, []grpclimit.KeyFunc{grpclimit.ByMetadata("x-api-key"), grpclimit.ByPeer()},
		grpclimit.WithQuotaName("per-key", "per-peer"), grpclimit.WithNoKey(codes.Unauthenticated))
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(in.Unary()), grpc.StreamInterceptor(in.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if serve {
		log.Printf("serving grpc.health.v1.Health on %s", lis.Addr())
		return srv.Serve(lis)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	return calls(lis.Addr().String())
}

// calls makes a few Check calls to the server at addr, with the API keys
// k1 (4 times, one over its limit) and k2, and one without a key, and
// prints each call's code and rate-limit trailers.
func calls(addr string) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	for _, key := range []string{"k1", "k1", "k1", "k1", "k2", ""} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "x-api-key", key)
		}
		var trailer metadata.MD
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		cancel()
		line := fmt.Sprintf("x-api-key %-4q %-17v", key, status.Code(err))
		for _, k := range []string{"ratelimit-policy", "ratelimit", "retry-after"} {
			if v := trailer.Get(k); len(v) > 0 {
				line += fmt.Sprintf(" %s: %s", k, strings.Join(v, ", "))
			}
		}
		fmt.Println(strings.TrimSpace(line))
	}
	return nil
}
