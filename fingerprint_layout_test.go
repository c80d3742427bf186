package idem

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/internal/canonjson"
)

// referenceFingerprint is the layout Fingerprint hashes, built field by
// field: version, method, URL, body kind, payload, each prefixed by its
// length. Stored intents carry digests of this layout.
func referenceFingerprint(method, target string, body []byte) string {
	kind, payload := bodyKindRaw, body
	if canon, isJSON := canonjson.Canonical(body); isJSON {
		kind, payload = bodyKindJSON, canon
	}
	var buf []byte
	for _, f := range []string{fingerprintVersion, method, target, kind, string(payload)} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// Fingerprint canonicalises in place in its one buffer; the digest is the
// layout's, for JSON, for bodies that are not canonicalised and for none.
func TestFingerprintKeepsItsLayout(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		"", `{"b":1,"a":2}`, `{"amount": 1000, "currency": "EUR", "reference": "r"}`,
		`{"a": 9007199254740993}`, `[1e-400]`, `not json`, `{"x":"\u00e9","n":1e2}`,
		`[1,2,3]`, "  {} ", `{"a":1,"a":2}`, `"a long string ` + string(make([]byte, 300)) + `"`,
		`{"nested":{"z":[true,false,null],"a":-0.5}}`,
	} {
		for _, method := range []string{"POST", "GET", ""} {
			got := Fingerprint(method, "https://api.example.com/v1/payments?x=1", []byte(body))
			assert.Equal(t, referenceFingerprint(method, "https://api.example.com/v1/payments?x=1", []byte(body)), got, "%s %q", method, body)
		}
	}
}
