package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/ratewise/ratewise/internal/keypart"
)

// A KeyFunc names the quota a call counts against: a method, a peer, an API
// key, a user, or a composite of them; method is the call's full method
// name, such as "/grpc.health.v1.Health/Check". Calls with the same key
// share one limit.
//
// Every key this package builds is "label:value" pairs joined by ':', such
// as "x-api-key:k1:method:/grpc.health.v1.Health/Check", with values escaped
// exactly as httplimit escapes them, so that no two distinct inputs give
// the same key.
type KeyFunc func(ctx context.Context, method string) (string, error)

// ErrNoKey is returned by a KeyFunc that cannot name the call's quota, such
// as ByMetadata for a call without that metadata. The interceptor fails the
// call with codes.Internal unless WithNoKey says otherwise; FirstOf tries
// the next KeyFunc instead.
var ErrNoKey = errors.New("grpclimit: no key for the call")

// ByMethod keys calls by their full method name, "method:/<service>/<method>",
// so that each method has a quota of its own.
func ByMethod() KeyFunc {
	return func(_ context.Context, method string) (string, error) {
		return keypart.Pair("method", method), nil
	}
}

// ByPeer keys calls by the peer's IP address, without its port, as
// "ip:<address>", and an IPv6 peer by its /64, since one client commonly
// holds a whole /64 (httplimit.ByIP's default). A peer that has no IP
// address, such as one on a unix socket, fails with ErrNoKey. Behind a
// proxy every call comes from the proxy: key by a metadata value the proxy
// sets instead (ByMetadata).
func ByPeer() KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", fmt.Errorf("%w: no peer", ErrNoKey)
		}
		a, ok := keypart.Host(p.Addr.String())
		if !ok {
			return "", fmt.Errorf("%w: peer %q is not an IP address", ErrNoKey, p.Addr.String())
		}
		return keypart.IP(a, 32, 64), nil
	}
}

// ByMetadata keys calls by the first value of the incoming metadata name,
// such as "x-api-key", as "<name>:<value>" with name in lower case, as gRPC
// keeps it. A call without it, or with an empty value, fails with ErrNoKey.
func ByMetadata(name string) KeyFunc {
	name = strings.ToLower(name)
	return ByValue(keypart.Escape(name), func(ctx context.Context) (string, bool) {
		v := metadata.ValueFromIncomingContext(ctx, name)
		if len(v) == 0 || v[0] == "" {
			return "", false
		}
		return v[0], true
	})
}

// ByUser keys calls by the authenticated user that user finds in the
// call's context, such as one an authentication interceptor put there
// before this one, as "user:<id>"; ok false means an anonymous call, which
// fails with ErrNoKey.
func ByUser(user func(ctx context.Context) (id string, ok bool)) KeyFunc {
	return ByValue("user", user)
}

// ByValue keys calls by a value of your own, encoded under label as this
// package's builders encode their values; ok false means the call has no
// such value: the KeyFunc fails with ErrNoKey, so FirstOf tries the next.
func ByValue(label string, value func(ctx context.Context) (string, bool)) KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		v, ok := value(ctx)
		if !ok {
			return "", fmt.Errorf("%w: no %s", ErrNoKey, label)
		}
		return keypart.Pair(label, v), nil
	}
}

// Composite keys calls by all of keys together, such as the API key and
// the method: each combination has its own quota.
func Composite(keys ...KeyFunc) KeyFunc {
	return func(ctx context.Context, method string) (string, error) {
		parts := make([]string, len(keys))
		for i, k := range keys {
			p, err := k(ctx, method)
			if err != nil {
				return "", err
			}
			parts[i] = p
		}
		return strings.Join(parts, ":"), nil
	}
}

// FirstOf keys a call by the first of keys that can name it, such as the
// API key when the call has one and the peer otherwise. It fails with
// ErrNoKey only when none can.
func FirstOf(keys ...KeyFunc) KeyFunc {
	return func(ctx context.Context, method string) (string, error) {
		err := ErrNoKey
		for _, k := range keys {
			var key string
			if key, err = k(ctx, method); err == nil {
				return key, nil
			}
			if !errors.Is(err, ErrNoKey) {
				return "", err
			}
		}
		return "", err
	}
}
