module github.com/ratewise/ratewise/grpclimit

go 1.26.0

replace github.com/ratewise/ratewise => ../

require (
	github.com/ratewise/ratewise v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12
)

require (
	github.com/oklog/ulid/v2 v2.1.2 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
)
