package grpclimit

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/ratelimitheader"
)

// An Option configures an Interceptor.
type Option interface {
	apply(*Interceptor) error
}

type optionFunc func(*Interceptor) error

func (f optionFunc) apply(i *Interceptor) error { return f(i) }

// WithKey sets how calls are keyed, for example
//
//	grpclimit.WithKey(grpclimit.Composite(grpclimit.ByMetadata("x-api-key"), grpclimit.ByMethod()))
//
// for one quota per API key and method. A MultiKey's keys are NewMultiKey's
// instead.
func WithKey(k KeyFunc) Option {
	return optionFunc(func(i *Interceptor) error {
		if k == nil {
			return fmt.Errorf("grpclimit: nil KeyFunc: %w", ratewise.ErrInvalidConfig)
		}
		i.key, i.keyOption = k, true
		return nil
	})
}

// WithOnError sets the hook that hears of every failure to decide a call:
// store failures and timeouts, before the failure mode acts, and every
// other error that fails a call with codes.Internal, such as a KeyFunc's,
// or the call's own context ending before the decision. Wire it to logs or
// metrics. The default logs a warning with log/slog.
func WithOnError(hook func(ctx context.Context, method string, err error)) Option {
	return optionFunc(func(i *Interceptor) error {
		if hook == nil {
			return fmt.Errorf("grpclimit: nil OnError hook; a store failure must be observable: %w", ratewise.ErrInvalidConfig)
		}
		i.onError = hook
		return nil
	})
}

// WithFailureMode sets what happens when the store fails: FailClosed (the
// default), FailOpen or Fallback.
func WithFailureMode(p FailureMode) Option {
	return optionFunc(func(i *Interceptor) error {
		if p == nil {
			return fmt.Errorf("grpclimit: nil failure mode: %w", ratewise.ErrInvalidConfig)
		}
		i.policy = p
		return nil
	})
}

// WithTimeout bounds each decision: a store that has not answered after d
// counts as failed, and the failure mode decides. The default is 500ms; 0
// waits for the store however long it takes, or until the call's own
// deadline. As for httplimit.WithTimeout, storeredis honours it with a
// go-redis client with ContextTimeoutEnabled (docs/redis.md, "Client
// settings").
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(i *Interceptor) error {
		if d < 0 {
			return fmt.Errorf("grpclimit: timeout must be >= 0, got %v: %w", d, ratewise.ErrInvalidConfig)
		}
		i.decider.Timeout = d
		return nil
	})
}

// WithQuotaName names the quotas in the ratelimit-policy and ratelimit
// trailers, as httplimit.WithQuotaName names them in headers; the default
// is "default". An interceptor from New takes one name; one from NewStack
// or NewMultiKey one per limit, in order, or one, which is numbered after
// it ("default-1", "default-2", ...):
//
//	grpclimit.NewMultiKey(multi, keys, grpclimit.WithQuotaName("per-key", "per-peer"))
//
// Each name must be printable ASCII, not empty, and no name may come twice;
// that, and any other number of names, fails construction with an error
// that wraps ratewise.ErrInvalidConfig.
func WithQuotaName(names ...string) Option {
	return optionFunc(func(i *Interceptor) error {
		if err := ratelimitheader.CheckNames(names); err != nil {
			return fmt.Errorf("grpclimit: %w", err)
		}
		i.names = append([]string(nil), names...)
		return nil
	})
}

// WithObserver reports every degraded decision to observe: every call the
// FailureMode answered because the store failed or did not answer within
// the decision timeout, as httplimit.WithObserver does for requests.
// observe runs on the call's goroutine before the call is answered, so it
// must be quick; label metrics with the event's Mode, Allowed and Quota,
// never with the call's key or peer.
func WithObserver(observe func(ctx context.Context, e DegradedEvent)) Option {
	return optionFunc(func(i *Interceptor) error {
		if observe == nil {
			return fmt.Errorf("grpclimit: nil observer: %w", ratewise.ErrInvalidConfig)
		}
		i.observer = observe
		return nil
	})
}

// WithNoKey sets the answer to a call the KeyFunc cannot name, one that
// fails with ErrNoKey, such as a call without the API key ByMetadata
// reads: a code such as codes.Unauthenticated or codes.InvalidArgument,
// or NoKeyUnlimited to let it through without limiting. Such a call is then
// answered as chosen, not failed, so the OnError hook does not hear of it
// (and the default hook logs no warning). Without WithNoKey such a call
// fails with codes.Internal and the OnError hook hears of it, since a key
// the server cannot build is usually a misconfiguration; to key such calls
// by something else instead, use FirstOf.
func WithNoKey(code codes.Code) Option {
	return optionFunc(func(i *Interceptor) error {
		if code > codes.Unauthenticated {
			return fmt.Errorf(
				"grpclimit: the answer to a call without a key must be a gRPC code or NoKeyUnlimited, got %d: %w",
				code,
				ratewise.ErrInvalidConfig,
			)
		}
		i.noKey, i.noKeySet = code, true
		return nil
	})
}

// NoKeyUnlimited, given to WithNoKey, lets calls without a key through
// unlimited.
const NoKeyUnlimited = codes.OK
