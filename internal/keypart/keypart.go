// Package keypart encodes the "label:value" pairs that the middlewares'
// keys are made of (httplimit's and grpclimit's), so that both build keys
// alike, a key from one composes with keys from the other, and no value
// can forge a label boundary.
package keypart

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/netip"
	"strings"
)

// maxValue is the longest escaped value kept as it is; a longer one is
// replaced by its SHA-256, so that a 1 MB header cannot make a 1 MB key.
const maxValue = 128

// Pair encodes one "label:value" pair. Bytes of value other than letters,
// digits and - . _ ~ / @ [ ] are percent-encoded, ':' and '%' included, so
// a value can never forge a label boundary and escaped values are distinct
// exactly when inputs are; a value too long to keep becomes '#' and its
// SHA-256 in hex, and '#' never appears in an escaped value. The label is
// the caller's and is kept as it is.
func Pair(label, value string) string {
	esc := Escape(value)
	if len(esc) > maxValue {
		sum := sha256.Sum256([]byte(value))
		esc = "#" + hex.EncodeToString(sum[:])
	}
	return label + ":" + esc
}

// Escape percent-encodes every byte of s but letters, digits and
// - . _ ~ / @ [ ].
func Escape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '/', c == '@', c == '[', c == ']':
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		}
	}
	return b.String()
}

// IP is the "ip:" pair of a client address: the address itself, or its
// network of the first v4 bits (IPv4) or v6 bits (IPv6) when they are
// fewer than the address has, since one client commonly holds a whole
// IPv6 /64. a must be valid and unmapped.
func IP(a netip.Addr, v4, v6 int) string {
	bits := v4
	if a.Is6() {
		bits = v6
	}
	if bits >= a.BitLen() {
		return Pair("ip", a.String())
	}
	p, _ := a.Prefix(bits)
	return Pair("ip", p.String())
}

// Host reads the address of a peer as a server reports it,
// "192.0.2.1:80", "[2001:db8::1]:443" or an address without a port,
// unmapped and without its zone; ok is false for anything else, such as
// a unix socket's path.
func Host(s string) (a netip.Addr, ok bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	host := s
	if h, _, err := net.SplitHostPort(s); err == nil {
		host = h
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	return a.Unmap().WithZone(""), true
}
