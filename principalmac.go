package idem

import (
	"crypto/sha256"
	"encoding/hex"
)

// The principal fingerprint is HMAC-SHA256 (RFC 2104) over the identity,
// its first 16 bytes in hex. It is computed here on one buffer and two
// digests of the stack, instead of crypto/hmac's two hash objects and
// pads: Begin and every attempt's credential check each compute one.

// macBlock is the HMAC key as one SHA-256 block: hashed when longer than
// a block, zero-padded otherwise.
func macBlock(key []byte) (block [sha256.BlockSize]byte) {
	if len(key) > sha256.BlockSize {
		sum := sha256.Sum256(key)
		copy(block[:], sum[:])
		return block
	}
	copy(block[:], key)
	return block
}

// macStart begins the inner message of an HMAC under key, for a message
// of about size bytes: the key XOR ipad. Append the message to it and
// give the whole to macFinish.
func macStart(key []byte, size int) []byte {
	return macStartIn(make([]byte, 0, sha256.BlockSize+size), key)
}

// macStartIn is macStart into buf, which it appends to from its start: a
// caller may give a buffer of its stack.
func macStartIn(buf, key []byte) []byte {
	block := macBlock(key)
	buf = buf[:0]
	for _, b := range block {
		buf = append(buf, b^0x36)
	}
	return buf
}

// macFinish is the principal fingerprint of the message in inner (as
// macStart began it): the first 16 bytes of HMAC-SHA256, hex.
func macFinish(key, inner []byte) string {
	innerSum := sha256.Sum256(inner)
	block := macBlock(key)
	var outer [sha256.BlockSize + sha256.Size]byte
	for i, b := range block {
		outer[i] = b ^ 0x5c
	}
	copy(outer[sha256.BlockSize:], innerSum[:])
	sum := sha256.Sum256(outer[:])
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}
