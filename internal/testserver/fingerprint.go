package testserver

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"

	"github.com/idemkit/idem/internal/canonjson"
)

// fingerprintVersion names the fingerprint layout, so a future change of
// layout can never produce the same digest for a different input.
const fingerprintVersion = "idem-fingerprint-v1"

// Body kinds, hashed as their own field so that a raw body can never
// collide with the canonical form of a JSON body.
const (
	bodyKindJSON = "json"
	bodyKindRaw  = "raw"
)

// Fingerprint is the hex SHA-256 over method, route and the canonical body.
// A body that parses as JSON is canonicalised with RFC 8785 (JCS), so key
// order, insignificant white space and number spelling do not matter;
// anything else, including an empty body and JSON that is not I-JSON (a
// duplicate member name, or a number an IEEE 754 double cannot hold
// exactly, which JCS would round), is hashed raw; canonjson.Canonical
// decides which. Every field is length-prefixed and the body kind is
// hashed too, so field boundaries are unambiguous and a raw body never
// collides with a JSON one.
func Fingerprint(method, route string, body []byte) string {
	h := sha256.New()
	writeField(h, []byte(fingerprintVersion))
	writeField(h, []byte(method))
	writeField(h, []byte(route))
	if canonical, isJSON := canonjson.Canonical(body); isJSON {
		writeField(h, []byte(bodyKindJSON))
		writeField(h, canonical)
	} else {
		writeField(h, []byte(bodyKindRaw))
		writeField(h, body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// writeField writes an 8-byte big-endian length, then the field.
func writeField(h hash.Hash, field []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(field)))
	_, _ = h.Write(n[:])
	_, _ = h.Write(field)
}
