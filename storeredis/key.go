package storeredis

import (
	"encoding/base64"

	"github.com/ratewise/ratewise/algorithms"
	"github.com/ratewise/ratewise/internal/algo"
	"github.com/ratewise/ratewise/internal/longkey"
	"github.com/ratewise/ratewise/storeredis/internal/scripts"
)

// Key returns the Redis key that holds alg's state for key, such as
// "ratewise:sliding_window:1m/6:{alice}": the window, and the sub-windows
// if any; for a kind whose state has had more than one layout, the layout's
// version follows the kind, as in "ratewise:gcra:v3:1s:{alice}", so that
// ratewise versions that lay it out differently never read each other's.
// A key longer than 2,048 bytes is kept under its SHA-256 digest, as in
// "ratewise:gcra:v3:1s:{%sha256:<43 characters of base64url>}", which no
// key kept whole spells: escaping puts "%" before "25", "7B" or "7D" only.
func (s *Store) Key(key string, alg algorithms.Algorithm) string {
	var buf [keyBuf]byte
	return string(s.appendKey(buf[:0], key, alg))
}

// keyBuf is how long a key appendKey builds in a buffer on the stack can
// be before it moves to the heap: most keys, such as a user's ID or an IP
// address, with the prefix, algorithm and scope.
const keyBuf = 128

// appendKey appends the Redis key of alg's state for key to b: the one
// spelling of it, which every op, the deny cache and the once keys derive
// from.
func (s *Store) appendKey(b []byte, key string, alg algorithms.Algorithm) []byte {
	b = append(b, s.prefix...)
	b = append(b, alg.Kind().String()...)
	b = append(b, ':')
	if v := scripts.Layout(alg.Kind()); v != "" {
		b = append(b, 'v')
		b = append(b, v...)
		b = append(b, ':')
	}
	b = algo.ScopeOf(alg).Append(b)
	b = append(b, ":{"...)
	if longkey.Over("", key) {
		sum := longkey.Sum("", key)
		b = append(b, "%sha256:"...)
		b = base64.RawURLEncoding.AppendEncode(b, sum[:])
	} else {
		b = appendEscaped(b, key)
	}
	return append(b, '}')
}

// appendEscaped appends key to b, made safe inside a hash tag and kept
// distinct from every other key: "%" becomes "%25", "{" "%7B" and "}"
// "%7D". With no brace left, the tag is the whole escaped key; with "%"
// escaped too, the mapping is one-to-one. Other bytes, invalid UTF-8
// included, pass through, since Redis keys are binary-safe.
func appendEscaped(b []byte, key string) []byte {
	for i := 0; i < len(key); i++ {
		switch c := key[i]; c {
		case '%':
			b = append(b, "%25"...)
		case '{':
			b = append(b, "%7B"...)
		case '}':
			b = append(b, "%7D"...)
		default:
			b = append(b, c)
		}
	}
	return b
}
