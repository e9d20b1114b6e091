package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/failmode"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

// Interceptor limits the calls to a gRPC server. Create it with New,
// NewStack or NewMultiKey, and install both of its interceptors:
//
//	srv := grpc.NewServer(grpc.UnaryInterceptor(in.Unary()), grpc.StreamInterceptor(in.Stream()))
//
// It is safe for simultaneous use by many goroutines.
type Interceptor struct {
	// decider holds the limits, the failure mode and the decision timeout,
	// and decides each call as httplimit's middleware decides a request.
	decider failmode.Decider
	key     KeyFunc
	// keys, for NewMultiKey, build a key for each of the MultiKey's
	// limiters, in place of key.
	keys []KeyFunc
	// keyOption reports that WithKey set key, which a MultiKey refuses.
	keyOption bool
	onError   func(ctx context.Context, method string, err error)
	observer  func(context.Context, DegradedEvent)
	policy    FailureMode
	// names are WithQuotaName's; quotas each limit's name, quoted as the
	// trailers carry it, and quota the DegradedEvent's Quota.
	names  []string
	quotas []string
	quota  string
	// noKey answers a call its KeyFunc cannot name (ErrNoKey), when
	// noKeySet: with this code, or by letting it through (NoKeyUnlimited).
	noKey    codes.Code
	noKeySet bool
}

// defaultTimeout bounds each decision unless WithTimeout says otherwise.
const defaultTimeout = 500 * time.Millisecond

// New returns an interceptor that limits with l. By default it keys calls
// by the peer's address (see ByPeer), charges each call 1, fails closed
// with codes.Unavailable when the store fails, bounds each decision by
// 500ms, and logs store failures with log/slog. A nil l or an invalid
// option fails with an error that wraps ratewise.ErrInvalidConfig.
func New(l *ratewise.Limiter, opts ...Option) (*Interceptor, error) {
	if l == nil {
		return nil, fmt.Errorf("grpclimit: nil limiter: %w", ratewise.ErrInvalidConfig)
	}
	i, err := newInterceptor(opts)
	if err != nil {
		return nil, err
	}
	i.decider.Limiter = l
	if err := i.finish(l); err != nil {
		return nil, err
	}
	return i, nil
}

// NewStack returns an interceptor that limits with every limit of set at
// once, all or nothing (see ratewise.Stack), such as 10 per second AND
// 1,000 per hour. The ratelimit-policy trailer lists every limit, named as
// WithQuotaName says, and ratelimit reports the binding one, as
// httplimit.NewStack does. The options are New's; a Stack takes no
// Fallback.
func NewStack(set *ratewise.Stack, opts ...Option) (*Interceptor, error) {
	if set == nil {
		return nil, fmt.Errorf("grpclimit: nil set: %w", ratewise.ErrInvalidConfig)
	}
	i, err := newInterceptor(opts)
	if err != nil {
		return nil, err
	}
	i.decider.Stack = set
	if err := i.finish(nil); err != nil {
		return nil, err
	}
	return i, nil
}

// NewMultiKey returns an interceptor that limits with every limiter of
// multi, each on a key of its own, all or nothing (see ratewise.MultiKey),
// such as a limit per API key and one per peer. keys builds a call's key for
// each limiter, in the MultiKey's order. A call that one limit denies is
// charged to none; the trailers describe every limit and the binding one,
// as httplimit.NewMultiKey's headers do. The options are New's, except
// WithKey, since keys name the quotas, and Fallback, which needs one
// Limiter. Either, a nil MultiKey, a nil KeyFunc, or a number of keys other
// than the MultiKey's limiters fails with an error that wraps
// ratewise.ErrInvalidConfig.
func NewMultiKey(multi *ratewise.MultiKey, keys []KeyFunc, opts ...Option) (*Interceptor, error) {
	if multi == nil {
		return nil, fmt.Errorf("grpclimit: nil MultiKey: %w", ratewise.ErrInvalidConfig)
	}
	limiters := multi.Limiters()
	if len(keys) != len(limiters) {
		return nil, fmt.Errorf(
			"grpclimit: %d KeyFuncs for a MultiKey of %d limiters, which takes one per limiter: %w",
			len(keys),
			len(limiters),
			ratewise.ErrInvalidConfig,
		)
	}
	for n, k := range keys {
		if k == nil {
			return nil, fmt.Errorf("grpclimit: KeyFunc %d of the MultiKey is nil: %w", n, ratewise.ErrInvalidConfig)
		}
	}
	i, err := newInterceptor(opts)
	if err != nil {
		return nil, err
	}
	if i.keyOption {
		return nil, fmt.Errorf(
			"grpclimit: WithKey does not apply to a MultiKey, whose keys NewMultiKey takes: %w",
			ratewise.ErrInvalidConfig,
		)
	}
	i.decider.Multi, i.decider.Limiters, i.keys = multi, limiters, append([]KeyFunc(nil), keys...)
	if err := i.finish(nil); err != nil {
		return nil, err
	}
	return i, nil
}

// newInterceptor applies opts to the defaults New documents.
func newInterceptor(opts []Option) (*Interceptor, error) {
	i := &Interceptor{
		key:    ByPeer(),
		policy: FailClosed(codes.Unavailable, time.Second),
		names:  []string{"default"},
		onError: func(_ context.Context, method string, err error) {
			slog.Default().Warn("grpclimit: could not rate-limit a call", "method", method, "err", err)
		},
	}
	i.decider.Timeout = defaultTimeout
	for _, o := range opts {
		if err := o.apply(i); err != nil {
			return nil, err
		}
	}
	return i, nil
}

// finish checks the failure mode for an interceptor that limits with l, or
// with the decider's Stack or MultiKey when l is nil, and names each limit.
func (i *Interceptor) finish(l *ratewise.Limiter) error {
	mode, err := i.policy.failure().check(l)
	if err != nil {
		return err
	}
	i.decider.Mode = mode
	if i.quotas, err = ratelimitheader.Names(i.names, i.decider.Limits()); err != nil {
		return fmt.Errorf("grpclimit: %w", err)
	}
	i.quota = ratelimitheader.Quota(i.names)
	return nil
}

// Unary returns the interceptor for unary calls.
func (i *Interceptor) Unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		trailer, err := i.decide(ctx, info.FullMethod)
		if trailer != nil {
			if terr := grpc.SetTrailer(ctx, trailer); terr != nil {
				// Only outside a gRPC server, whose calls always have a
				// stream to set trailers on.
				i.onError(ctx, info.FullMethod, terr)
			}
		}
		if err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

// Stream returns the interceptor for streaming calls, which charges a
// stream once, when it opens.
func (i *Interceptor) Stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		trailer, err := i.decide(ss.Context(), info.FullMethod)
		if trailer != nil {
			ss.SetTrailer(trailer)
		}
		if err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// decide decides a call to method: the trailers to send, if any, and the
// status error that ends the call, or nil to let it through.
func (i *Interceptor) decide(ctx context.Context, method string) (metadata.MD, error) {
	var key string
	var keys []string // a MultiKey's, in place of key
	var err error
	if i.decider.Multi != nil {
		keys, err = i.keysOf(ctx, method)
	} else {
		key, err = i.key(ctx, method)
	}
	if err != nil {
		switch {
		case !errors.Is(err, ErrNoKey) || !i.noKeySet:
			i.onError(ctx, method, err)
			return nil, i.failed(ctx)
		case i.noKey == NoKeyUnlimited:
			// WithNoKey chose the answer: no failure, so the OnError hook
			// does not hear of it.
			return nil, nil
		}
		return nil, status.Error(i.noKey, "no rate-limit key for the call")
	}
	out := i.decider.Decide(ctx, key, keys, 1, func(err error) { i.onError(ctx, method, err) })
	if out.Degraded && i.observer != nil {
		i.observer(ctx, DegradedEvent{
			Mode:    i.decider.Mode.Name(),
			Allowed: out.Allowed,
			Quota:   i.quota,
			Err:     out.StoreErr,
		})
	}
	switch out.Verdict {
	case failmode.Fail:
		if !out.StoreFailed {
			return nil, i.failed(ctx)
		}
		if i.decider.Mode.Name() != failmode.ClosedName {
			// A fallback whose local limiter failed too: as
			// FailClosed(codes.Unavailable, 0).
			return nil, status.Error(codes.Unavailable, "rate limit store unavailable")
		}
		d := i.decider.Mode.RetryAfter()
		if d == 0 {
			return nil, status.Error(i.policy.failure().code, "rate limit store unavailable")
		}
		md := metadata.MD{}
		md.Append(ratelimitheader.RetryAfter, strconv.FormatInt(ratelimitheader.RetryAfterSeconds(d), 10))
		return md, retryStatus(i.policy.failure().code, "rate limit store unavailable", d)
	case failmode.Unlimited:
		// Failed open: there is no decision to describe.
		return nil, nil
	}
	md := metadata.MD{}
	add := func(field, value string) { md.Append(field, value) }
	ratelimitheader.Write(add, i.quotas, out.Algorithms, out.Decision.Results, out.Decision.Binding)
	if out.Verdict == failmode.Deny {
		res := out.Decision.Result
		md.Append(ratelimitheader.RetryAfter, strconv.FormatInt(ratelimitheader.RetryAfterSeconds(res.RetryAfter), 10))
		return md, retryStatus(codes.ResourceExhausted, "rate limit exceeded", res.RetryAfter)
	}
	return md, nil
}

// keysOf builds a call's key for each of the MultiKey's limiters.
func (i *Interceptor) keysOf(ctx context.Context, method string) ([]string, error) {
	keys := make([]string, len(i.keys))
	for n, k := range i.keys {
		key, err := k(ctx, method)
		if err != nil {
			return nil, err
		}
		keys[n] = key
	}
	return keys, nil
}

// failed is the status of a call that could not be decided for a reason
// other than the store: the call's own context ending, with its own code,
// and anything else (a key that could not be built, an algorithm the store
// cannot run) with codes.Internal, whose message tells the client nothing
// of the server's configuration.
func (i *Interceptor) failed(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Internal, "could not rate-limit the call")
}

// retryStatus is a status of code with a RetryInfo detail of after, exact,
// where the retry-after trailer is in whole seconds.
func retryStatus(code codes.Code, msg string, after time.Duration) error {
	st, err := status.New(code, msg).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)})
	if err != nil {
		// Only a detail that does not marshal, which RetryInfo always does.
		return status.Error(code, msg)
	}
	return st.Err()
}
