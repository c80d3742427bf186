package server

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/idemkit/idem/internal/canonjson"
)

// Layout names hashed first, so a change of layout can never produce the
// same digest for a different input.
const (
	fingerprintVersion       = "idem-fingerprint-v1"
	requestFingerprintLayout = "idem-fingerprint-v2"
)

// RequestFingerprintPrefix starts every fingerprint RequestFingerprint
// returns. A stored fingerprint without it was written under the first
// layout (Fingerprint: method, route and body, no request target).
const RequestFingerprintPrefix = "v2:"

// Body kinds, hashed as their own field so that a raw body can never
// collide with the canonical form of a JSON body.
const (
	bodyKindJSON = "json"
	bodyKindRaw  = "raw"
)

// Fingerprint is the hex SHA-256 over method, route and the canonical body:
// the fingerprint of a payload that has no request target, such as a
// message (Once), and the first layout of the HTTP layer, which records
// stored before RequestFingerprint carry. The layer fingerprints requests
// with RequestFingerprint.
//
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
	return fingerprintFields("", body, MaxJSONTokens, false, fingerprintVersion, method, route)
}

// RequestFingerprint is the fingerprint the layer gives a request: the hex
// SHA-256, after RequestFingerprintPrefix, over method, route (the pattern
// the request matched), the request path in its escaped form as sent
// (url.URL.EscapedPath: the path values, so /accounts/A/refunds and
// /accounts/B/refunds differ, and so do /a%2Fb and /a/b), the raw query
// as sent (url.URL.RawQuery: no decoding, no reordering, so ?a=1&b=2 and
// ?b=2&a=1 are two requests), and the body canonicalised as Fingerprint
// does.
func RequestFingerprint(method, route, path, rawQuery string, body []byte) string {
	return requestFingerprintWithin(method, route, path, rawQuery, body, MaxJSONTokens)
}

// requestFingerprintWithin is RequestFingerprint with a JSON body of more
// than maxTokens values hashed raw: the layer passes the value limit of
// its max body (JSONTokenLimit).
func requestFingerprintWithin(method, route, path, rawQuery string, body []byte, maxTokens int) string {
	return requestFingerprintScanned(method, route, path, rawQuery, body, maxTokens, false)
}

// requestFingerprintScanned is requestFingerprintWithin for a body that
// scanned, when true, says scanJSONShape already found within maxTokens,
// so it is not scanned twice.
func requestFingerprintScanned(method, route, path, rawQuery string, body []byte, maxTokens int, scanned bool) string {
	return fingerprintFields(RequestFingerprintPrefix, body, maxTokens, scanned, requestFingerprintLayout, method, route, path, rawQuery)
}

// legacyJSONTokens is the fixed JSON value limit of the layout before the
// request target was fingerprinted; a stored fingerprint of that layout was
// taken under it.
const legacyJSONTokens = 16384

// fingerprintBeforeTarget is the fingerprint the layer gave a request
// before the request target was in it: Fingerprint under the value limit of
// that time.
func fingerprintBeforeTarget(method, route string, body []byte) string {
	return fingerprintFields("", body, legacyJSONTokens, false, fingerprintVersion, method, route)
}

// legacyFingerprint reports whether stored was written under the first
// layout: 64 hex digits, no prefix.
func legacyFingerprint(stored string) bool {
	return len(stored) == 2*sha256.Size && !strings.HasPrefix(stored, RequestFingerprintPrefix)
}

// fingerprintFields hashes fields, then the body (raw when it holds more
// than maxTokens JSON values), and returns prefix and the hex digest.
// scanned says the body's shape was already found within maxTokens.
func fingerprintFields(prefix string, body []byte, maxTokens int, scanned bool, fields ...string) string {
	// Every field goes into one buffer hashed at once: no hash state or
	// canonical body of its own on the heap.
	size := (len(fields)+2)*fieldLengthSize + len(bodyKindJSON) + len(body)
	for _, f := range fields {
		size += len(f)
	}
	pooled := fingerprintBufs.Get().(*[]byte)
	defer putFingerprintBuf(pooled)
	buf := (*pooled)[:0]
	if cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	for _, f := range fields {
		buf = appendField(buf, f)
	}
	beforeBody := len(buf)
	buf = appendField(buf, bodyKindJSON)
	bodyAt := len(buf) + fieldLengthSize
	if !scanned && scanJSONShape(body, maxTokens) != shapeOK {
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
	*pooled = buf
	var digest [2 * sha256.Size]byte
	hex.Encode(digest[:], sum[:])
	var text strings.Builder
	text.Grow(len(prefix) + len(digest))
	text.WriteString(prefix)
	text.Write(digest[:])
	return text.String()
}

// maxPooledFingerprintBuf bounds the buffers kept for reuse, so one large
// body does not pin its size in memory.
const maxPooledFingerprintBuf = 64 << 10

// fingerprintBufs holds the buffers fingerprintFields hashes: one is
// filled and dropped per request, and reused it costs no allocation.
var fingerprintBufs = sync.Pool{New: func() any { return new([]byte) }}

func putFingerprintBuf(b *[]byte) {
	if cap(*b) > maxPooledFingerprintBuf {
		*b = nil
	}
	fingerprintBufs.Put(b)
}

// fieldLengthSize is the size of the length before every field.
const fieldLengthSize = 8

// appendField appends an 8-byte big-endian length, then the field.
func appendField[T string | []byte](buf []byte, field T) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(field)))
	return append(buf, field...)
}
