// Package hashslot computes the Redis Cluster hash slot of a key, as Redis
// and go-redis do, so that code outside storeredis can tell whether two
// keys land on one node without asking a server (CLUSTER KEYSLOT needs
// cluster mode, which a proxy or a managed offering may not expose).
package hashslot

import "strings"

// slots is how many hash slots a Redis Cluster has.
const slots = 16384

// Of returns key's hash slot: the CRC16 of its hash tag, the text between
// the first "{" and the next "}" when that is not empty, or else of the
// whole key, modulo 16384. "{user1000}.following" and "user1000" share
// slot 3443; "foo{}{bar}" has no tag, so all of it is hashed.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % slots)
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
