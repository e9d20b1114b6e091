// Package longkey bounds what a store keeps for a key, however long the
// key: a key longer than Threshold bytes is kept under its SHA-256 digest,
// spelled by each store so that it can never be taken for a key kept as it
// is (see the stores' key docs). Keys come from request data (a path, a
// header, a token), so their length is the caller's to choose; the state,
// the once records of request IDs and the lease marks of a long key then
// cost what a key of about 40 bytes costs.
package longkey

import "crypto/sha256"

// Threshold is the longest key, in bytes of store.Key.String, that a store
// keeps as it is: far above the keys services build (a user ID, an IP, a
// route), and below the longest that PostgreSQL's index takes with a
// request ID beside it.
const Threshold = 2048

// Over reports whether the key ns:name (store.Key.String; ns is "" for
// none) is longer than Threshold.
func Over(ns, name string) bool {
	n := len(name)
	if ns != "" {
		n += len(ns) + 1
	}
	return n > Threshold
}

// Sum returns the SHA-256 digest of the key ns:name as store.Key.String
// spells it, without joining the parts.
func Sum(ns, name string) [sha256.Size]byte {
	h := sha256.New()
	if ns != "" {
		h.Write([]byte(ns))
		h.Write([]byte{':'})
	}
	h.Write([]byte(name))
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
