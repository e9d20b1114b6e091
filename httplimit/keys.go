package httplimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/keypart"
)

// A KeyFunc names the quota a request counts against: a user, a client
// address, a route, or a composite of them. Requests with the same key
// share one limit.
//
// Every key this package builds is "label:value" pairs joined by ':', such
// as "user:1001:path:/pay" (the common Redis pattern
// rate:sliding:user:1001:api:/pay, without the limiter's prefix). Values are escaped, so that no two
// distinct inputs give the same key: a user named "1001:path:/pay" cannot
// borrow someone else's quota.
type KeyFunc func(r *http.Request) (string, error)

// ErrNoKey is returned by a KeyFunc that cannot name the request's quota,
// such as ByUser for an anonymous request. The middleware answers it with
// the error handler; FirstOf tries the next KeyFunc instead.
var ErrNoKey = errors.New("httplimit: no key for the request")

// ByUser keys requests by the authenticated user that user returns, with
// ok false for an anonymous request (which then fails with ErrNoKey).
func ByUser(user func(r *http.Request) (id string, ok bool)) KeyFunc {
	return func(r *http.Request) (string, error) {
		id, ok := user(r)
		if !ok {
			return "", fmt.Errorf("%w: no authenticated user", ErrNoKey)
		}
		return keypart.Pair("user", id), nil
	}
}

// ByPath keys requests by their URL path, as the server received it.
func ByPath() KeyFunc {
	return func(r *http.Request) (string, error) {
		return keypart.Pair("path", r.URL.Path), nil
	}
}

// ByPattern keys requests by the http.ServeMux pattern that matched them,
// such as "GET /users/{id}", so that every user ID shares one route quota.
// The middleware must wrap the handler the mux calls, not the mux itself,
// for the pattern to be known; otherwise it fails with ErrNoKey.
func ByPattern() KeyFunc {
	return func(r *http.Request) (string, error) {
		if r.Pattern == "" {
			return "", fmt.Errorf("%w: no ServeMux pattern; wrap the handler inside the mux", ErrNoKey)
		}
		return keypart.Pair("route", r.Pattern), nil
	}
}

// Composite keys requests by all of keys together, such as the user and
// the path: each combination has its own quota.
func Composite(keys ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		parts := make([]string, len(keys))
		for i, k := range keys {
			p, err := k(r)
			if err != nil {
				return "", err
			}
			parts[i] = p
		}
		return strings.Join(parts, ":"), nil
	}
}

// FirstOf keys a request by the first of keys that can name it, such as
// the user when one is signed in and the client IP otherwise. It fails
// with ErrNoKey only when none can.
func FirstOf(keys ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, error) {
		err := ErrNoKey
		for _, k := range keys {
			var key string
			if key, err = k(r); err == nil {
				return key, nil
			}
			if !errors.Is(err, ErrNoKey) {
				return "", err
			}
		}
		return "", err
	}
}

// ByValue keys requests by a value of your own, such as an API key from a
// header, encoded under label as this package's builders encode their
// values. ok false means the request has no
// such value: the KeyFunc fails with ErrNoKey, so FirstOf tries the next.
//
//	byAPIKey := httplimit.ByValue("apikey", func(r *http.Request) (string, bool) {
//		k := r.Header.Get("X-Api-Key")
//		return k, k != ""
//	})
//	httplimit.WithKey(httplimit.FirstOf(byAPIKey, byIP))
func ByValue(label string, value func(r *http.Request) (string, bool)) KeyFunc {
	return func(r *http.Request) (string, error) {
		v, ok := value(r)
		if !ok {
			return "", fmt.Errorf("%w: no %s", ErrNoKey, label)
		}
		return keypart.Pair(label, v), nil
	}
}

// IPConfig says how ByIP finds the client's address.
type IPConfig struct {
	// TrustedProxies lists the CIDRs of the proxies in front of the server,
	// such as "10.0.0.0/8". Only a request whose connection comes from one
	// of them has its forwarding header read, and the header is read from
	// the right, past every trusted proxy, to the first address a trusted
	// proxy vouches for. With none, the connection's address is the client.
	TrustedProxies []string
	// Header is the forwarding header the proxies set: "X-Forwarded-For"
	// (the default) or "Forwarded" (RFC 7239).
	Header string
	// UnixSocketIsProxy says that a connection over a unix socket comes
	// from a proxy on the same host, whose forwarding header names the
	// client. Without it such a request has no key (ErrNoKey), since its
	// RemoteAddr ("@" or a path) is no address.
	UnixSocketIsProxy bool
	// IPv6Prefix groups IPv6 clients by their first IPv6Prefix bits, since
	// one client commonly holds a whole /64; 0 means 64. IPv4Prefix does
	// the same for IPv4; 0 means 32, one address.
	IPv6Prefix, IPv4Prefix int
}

// ByIP keys requests by client address, per cfg. It fails, with an error
// that wraps ratewise.ErrInvalidConfig, if cfg lists an invalid CIDR or
// prefix or names another header.
func ByIP(cfg IPConfig) (KeyFunc, error) {
	var trusted []netip.Prefix
	for _, c := range cfg.TrustedProxies {
		p, err := trustedPrefix(strings.TrimSpace(c))
		if err != nil {
			return nil, err
		}
		trusted = append(trusted, p)
	}
	header := cfg.Header
	if header == "" {
		header = "X-Forwarded-For"
	}
	if h := http.CanonicalHeaderKey(header); h != "X-Forwarded-For" && h != "Forwarded" {
		return nil, fmt.Errorf(
			"httplimit: forwarding header must be X-Forwarded-For or Forwarded, got %q: %w",
			cfg.Header,
			ratewise.ErrInvalidConfig,
		)
	}
	v6, v4 := cfg.IPv6Prefix, cfg.IPv4Prefix
	if v6 == 0 {
		v6 = 64
	}
	if v4 == 0 {
		v4 = 32
	}
	if v6 < 1 || v6 > 128 || v4 < 1 || v4 > 32 {
		return nil, fmt.Errorf(
			"httplimit: IPv6 prefix must be in [1, 128] and IPv4 prefix in [1, 32], got %d and %d: %w",
			v6,
			v4,
			ratewise.ErrInvalidConfig,
		)
	}
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) (string, error) {
		client, err := remoteAddr(r.RemoteAddr)
		proxied := err == nil && isTrusted(client)
		if err != nil {
			if !cfg.UnixSocketIsProxy || !unixSocket(r.RemoteAddr) {
				return "", err
			}
			// A local proxy on a unix socket: only its header names the
			// client.
			proxied, client = true, netip.Addr{}
		}
		if proxied {
			hops := forwarded(r.Header, header)
			// From the right: the nearest hop first. The first address
			// that is not one of our proxies is the client; anything to
			// its left was written by the client and proves nothing.
			for i := len(hops) - 1; i >= 0; i-- {
				a, ok := parseHop(hops[i])
				if !ok {
					// Keying by the proxy's address would put every client
					// behind it in one quota.
					return "", fmt.Errorf("%w: forwarding hop %q is not an address", ErrNoKey, hops[i])
				}
				client = a
				if !isTrusted(a) {
					break
				}
			}
			if !client.IsValid() {
				return "", fmt.Errorf("%w: no %s header from the proxy on %q", ErrNoKey, header, r.RemoteAddr)
			}
		}
		return keypart.IP(client, v4, v6), nil
	}, nil
}

// trustedPrefix reads one trusted proxy: a CIDR or an address. An
// IPv4-mapped IPv6 CIDR (::ffff:10.0.0.0/104) is its IPv4 CIDR
// (10.0.0.0/8), since addresses are compared unmapped. A CIDR of every
// address (/0), which would let any client claim any address, is refused.
func trustedPrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		a, aerr := netip.ParseAddr(s)
		if aerr != nil {
			return netip.Prefix{}, fmt.Errorf(
				"httplimit: trusted proxy %q is not a CIDR or an address: %w",
				s,
				ratewise.ErrInvalidConfig,
			)
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	addr, bits := p.Addr(), p.Bits()
	if addr.Is4In6() {
		if bits < 96 {
			return netip.Prefix{}, fmt.Errorf(
				"httplimit: trusted proxy %q covers more than IPv4-mapped addresses: %w",
				s,
				ratewise.ErrInvalidConfig,
			)
		}
		addr, bits = addr.Unmap(), bits-96
	}
	if bits == 0 {
		return netip.Prefix{}, fmt.Errorf(
			"httplimit: trusted proxy %q trusts every address, so any client could claim any address: %w",
			s,
			ratewise.ErrInvalidConfig,
		)
	}
	return netip.PrefixFrom(addr, bits).Masked(), nil
}

// unixSocket reports whether a RemoteAddr is a unix socket's, as net/http
// reports it: "@" for an unnamed peer, or a path.
func unixSocket(s string) bool { return s == "@" || strings.HasPrefix(s, "/") || s == "" }

func remoteAddr(s string) (netip.Addr, error) {
	a, ok := keypart.Host(s)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q is not an IP address", ErrNoKey, s)
	}
	return a, nil
}

// forwarded lists the addresses of every hop in the forwarding header, in
// order, across all of its lines.
func forwarded(h http.Header, name string) []string {
	var hops []string
	for _, line := range h.Values(name) {
		for _, elem := range strings.Split(line, ",") {
			elem = strings.TrimSpace(elem)
			if name == "Forwarded" || http.CanonicalHeaderKey(name) == "Forwarded" {
				// for=192.0.2.60;proto=http, for="[2001:db8::1]:4711"
				v := ""
				for _, pair := range strings.Split(elem, ";") {
					k, val, ok := strings.Cut(strings.TrimSpace(pair), "=")
					if ok && strings.EqualFold(k, "for") {
						v = strings.Trim(val, `"`)
					}
				}
				elem = v
			}
			hops = append(hops, elem)
		}
	}
	return hops
}

// parseHop reads one hop's address: "192.0.2.1", "192.0.2.1:80",
// "2001:db8::1", "[2001:db8::1]:443". Obfuscated or unknown hops do not
// parse.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil {
		return a.Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}
