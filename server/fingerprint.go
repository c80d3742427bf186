package server

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

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
// collides with a JSON one. A body with invalid UTF-8, nesting deeper than
// MaxJSONDepth or more than MaxJSONTokens values is hashed raw without
// being decoded: a decoder would rewrite invalid bytes to U+FFFD and merge
// distinct bodies, and a huge document would cost far more to decode than
// to read. The middleware fingerprints with the value limit of its max
// body (JSONTokenLimit), which is MaxJSONTokens unless WithMaxBody is
// above DefaultMaxBody.
func Fingerprint(method, route string, body []byte) string {
	return fingerprintWithin(method, route, body, MaxJSONTokens)
}

// fingerprintWithin is Fingerprint with a JSON body of more than
// maxTokens values hashed raw.
func fingerprintWithin(method, route string, body []byte, maxTokens int) string {
	// Every field goes into one buffer hashed at once: no hash state or
	// canonical body of its own on the heap.
	buf := make([]byte, 0, 5*fieldLengthSize+len(fingerprintVersion)+len(method)+len(route)+len(bodyKindJSON)+len(body))
	buf = appendField(buf, fingerprintVersion)
	buf = appendField(buf, method)
	buf = appendField(buf, route)
	beforeBody := len(buf)
	buf = appendField(buf, bodyKindJSON)
	bodyAt := len(buf) + fieldLengthSize
	if scanJSONShape(body, maxTokens) != shapeOK {
		buf = appendField(buf[:beforeBody], bodyKindRaw)
		buf = appendField(buf, body)
	} else if canonical, isJSON := canonjson.AppendCanonical(binary.BigEndian.AppendUint64(buf, 0), body); isJSON {
		binary.BigEndian.PutUint64(canonical[len(buf):], uint64(len(canonical)-bodyAt))
		buf = canonical
	} else {
		buf = appendField(buf[:beforeBody], bodyKindRaw)
		buf = appendField(buf, body)
	}
	sum := sha256.Sum256(buf)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// fieldLengthSize is the size of the length before every field.
const fieldLengthSize = 8

// appendField appends an 8-byte big-endian length, then the field.
func appendField[T string | []byte](buf []byte, field T) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(field)))
	return append(buf, field...)
}
