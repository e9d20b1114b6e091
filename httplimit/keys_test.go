package httplimit

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ratewise/ratewise"
	"github.com/ratewise/ratewise/internal/keypart"
)

// Distinct inputs must never share a key: every combination of these
// adversarial users and paths gets a key of its own.
func TestKeysNeverCollide(t *testing.T) {
	long := strings.Repeat("a", 10_000)
	values := []string{
		"", "1001", "1001:path:/pay", "1001:path", ":", "::", "%", "%3A", "%253A", "a%3Ab", "a:b",
		"{1001}", "{", "}", "}{", "#", "#" + strings.Repeat("0", 64), "|", "a|b", " ", "\t", "\x00", "\n",
		"\xff", "\xc3\x28", "é", "e\u0301", "/pay", "/pay/", "//pay", "/p%61y", "user:1001", "path:/pay",
		long, long + "b", long[:129], long[:128], strings.Repeat("%", 200), strings.Repeat(":", 64),
		// A literal that spells the digest a long value is replaced by.
		fmt.Sprintf("%x", sha256.Sum256([]byte(long))),
	}
	type input struct{ user, path string }
	seen := map[string]input{}
	check := func(key string, in input) {
		if prev, ok := seen[key]; ok && prev != in {
			t.Fatalf("key %q for both %q and %q", key, prev, in)
		}
		seen[key] = in
		if len(key) > 512 {
			t.Fatalf("key of %d bytes for %q", len(key), in)
		}
	}
	key := Composite(ByUser(func(r *http.Request) (string, bool) { return r.Header.Get("X-User"), true }), ByPath())
	for _, user := range values {
		for _, path := range values {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header["X-User"] = []string{user}
			r.URL.Path = path
			k, err := key(r)
			if err != nil {
				t.Fatal(err)
			}
			check(k, input{user, path})
		}
	}
	// A composite of one part never collides with a single key of another
	// label, nor with the composite.
	for _, v := range values {
		r := httptest.NewRequest("GET", "/", nil)
		r.URL.Path = v
		k, _ := ByPath()(r)
		check(k, input{"(path only)", v})
	}
	if got, want := len(seen), len(values)*len(values)+len(values); got != want {
		t.Fatalf("%d distinct keys, want %d", got, want)
	}
}

func TestCompositeKeyReadsLabelValuePairs(t *testing.T) {
	r := httptest.NewRequest("POST", "/pay", nil)
	key := Composite(ByUser(func(*http.Request) (string, bool) { return "1001", true }), ByPath())
	got, err := key(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := "user:1001:path:/pay"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestByIP(t *testing.T) {
	cases := []struct {
		name    string
		cfg     IPConfig
		remote  string
		headers map[string][]string
		want    string
	}{
		{"remote address", IPConfig{}, "192.0.2.7:5123", nil, "ip:192.0.2.7"},
		{"header from an untrusted peer is ignored", IPConfig{}, "192.0.2.7:5123",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "ip:192.0.2.7"},
		{
			"header from a peer outside the trusted CIDRs is ignored",
			IPConfig{TrustedProxies: []string{"10.0.0.0/8"}},
			"192.0.2.7:5123",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}},
			"ip:192.0.2.7",
		},
		{"trusted proxy", IPConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "ip:203.0.113.9"},
		{"spoofed entries left of the proxy's are ignored", IPConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1, 10.9.9.9, 203.0.113.9"}}, "ip:203.0.113.9"},
		{
			"chain of trusted proxies, header over two lines",
			IPConfig{TrustedProxies: []string{"10.0.0.0/8", "172.16.0.1"}},
			"10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9", "172.16.0.1, 10.0.0.5"}},
			"ip:203.0.113.9",
		},
		{"every hop trusted: the leftmost", IPConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"10.0.0.9, 10.0.0.5"}}, "ip:10.0.0.9"},
		// Keying by the proxy would put every client behind it in one quota.
		{"a hop that is no address has no key", IPConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9, not-an-ip"}}, ""},
		{
			"IPv4-mapped trusted CIDR: ::ffff:10.0.0.0/104 is 10.0.0.0/8",
			IPConfig{TrustedProxies: []string{"::ffff:10.0.0.0/104"}},
			"10.200.1.1:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}},
			"ip:203.0.113.9",
		},
		{"unix socket: no key", IPConfig{TrustedProxies: []string{"10.0.0.0/8"}}, "@",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, ""},
		{"unix socket from a local proxy", IPConfig{UnixSocketIsProxy: true}, "@",
			map[string][]string{"X-Forwarded-For": {"198.51.100.1, 203.0.113.9"}}, "ip:203.0.113.9"},
		{
			"unix socket path from a local proxy, through trusted hops",
			IPConfig{UnixSocketIsProxy: true, TrustedProxies: []string{"10.0.0.0/8"}},
			"/run/app.sock",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9, 10.0.0.5"}},
			"ip:203.0.113.9",
		},
		{"unix socket without a forwarding header: no key", IPConfig{UnixSocketIsProxy: true}, "@", nil, ""},
		{
			"Forwarded header, quoted IPv6 with port",
			IPConfig{TrustedProxies: []string{"10.0.0.0/8"}, Header: "Forwarded"},
			"10.1.2.3:80",
			map[string][]string{
				"Forwarded": {`for=198.51.100.1, for="[2001:db8:cafe:1::17]:4711";proto=https`},
			},
			"ip:2001%3Adb8%3Acafe%3A1%3A%3A/64",
		},
		{
			"Forwarded configured, X-Forwarded-For ignored",
			IPConfig{TrustedProxies: []string{"10.0.0.0/8"}, Header: "Forwarded"},
			"10.1.2.3:80",
			map[string][]string{"X-Forwarded-For": {"203.0.113.9"}},
			"ip:10.1.2.3",
		},
		{"IPv6 grouped by /64", IPConfig{}, "[2001:db8:1:2:3:4:5:6]:443", nil, "ip:2001%3Adb8%3A1%3A2%3A%3A/64"},
		{"IPv6 grouped by /48", IPConfig{IPv6Prefix: 48}, "[2001:db8:1:2:3:4:5:6]:443", nil, "ip:2001%3Adb8%3A1%3A%3A/48"},
		{"IPv6 /128 keeps the address", IPConfig{IPv6Prefix: 128}, "[2001:db8::1%eth0]:443", nil, "ip:2001%3Adb8%3A%3A1"},
		{"IPv4-mapped IPv6 is IPv4", IPConfig{}, "[::ffff:192.0.2.7]:80", nil, "ip:192.0.2.7"},
		{"IPv4 grouped by /24", IPConfig{IPv4Prefix: 24}, "192.0.2.7:80", nil, "ip:192.0.2.0/24"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key, err := ByIP(c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			for k, v := range c.headers {
				r.Header[k] = v
			}
			got, err := key(r)
			if c.want == "" {
				if !errors.Is(err, ErrNoKey) {
					t.Fatalf("got %q, %v; want ErrNoKey", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestByIPRejectsBadConfig(t *testing.T) {
	for _, cfg := range []IPConfig{
		{TrustedProxies: []string{"10.0.0.0/33"}},
		{TrustedProxies: []string{"proxy.internal"}},
		{TrustedProxies: []string{"0.0.0.0/0"}},
		{TrustedProxies: []string{"::/0"}},
		{TrustedProxies: []string{"::ffff:0:0/80"}},
		{Header: "X-Real-IP"},
		{IPv6Prefix: 129},
		{IPv4Prefix: -1},
	} {
		if _, err := ByIP(cfg); !errors.Is(err, ratewise.ErrInvalidConfig) {
			t.Errorf("ByIP(%+v): got %v, want ratewise.ErrInvalidConfig", cfg, err)
		}
	}
}

func TestFirstOfFallsBackOnlyOnErrNoKey(t *testing.T) {
	anonymous := ByUser(func(*http.Request) (string, bool) { return "", false })
	byIP, _ := ByIP(IPConfig{})
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "192.0.2.1:1"
	got, err := FirstOf(anonymous, byIP)(r)
	if err != nil || got != "ip:192.0.2.1" {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := FirstOf(anonymous)(r); err == nil {
		t.Fatal("no key: want ErrNoKey")
	}
}

// A custom value keyed with ByValue, or built with Part, cannot forge
// another KeyFunc's key: an API key of "ip:192.0.2.10" is not that IP.
func TestByValueCannotForgeAnotherKey(t *testing.T) {
	byAPIKey := ByValue("apikey", func(r *http.Request) (string, bool) {
		k := r.Header.Get("X-Api-Key")
		return k, k != ""
	})
	byIP, _ := ByIP(IPConfig{})
	key := FirstOf(byAPIKey, byIP)
	attacker := httptest.NewRequest("GET", "/", nil)
	attacker.RemoteAddr = "198.51.100.7:1"
	attacker.Header.Set("X-Api-Key", "ip:192.0.2.10")
	victim := httptest.NewRequest("GET", "/", nil)
	victim.RemoteAddr = "192.0.2.10:1"
	a, errA := key(attacker)
	v, errV := key(victim)
	if errA != nil || errV != nil || a == v {
		t.Fatalf("attacker %q (%v), victim %q (%v): want two distinct keys", a, errA, v, errV)
	}
	if want := "apikey:ip%3A192.0.2.10"; a != want || keypart.Pair("apikey", "ip:192.0.2.10") != want {
		t.Fatalf("attacker's key %q, want %q", a, want)
	}
	if _, err := byAPIKey(victim); !errors.Is(err, ErrNoKey) {
		t.Fatalf("no API key: %v, want ErrNoKey", err)
	}
}
