package idemtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/idemkit/idem/dialect"
)

// Key formats of ConformanceOptions.KeyFormat: the shape of every key the
// checker sends where a valid key is meant. Servers often accept only one
// shape, so a key the server refuses for its shape would hide every other
// finding.
const (
	// KeyFormatUUID is a random RFC 9562 version 4 UUID, 36 characters:
	// the default, since the common validators accept it.
	KeyFormatUUID = "uuid"
	// KeyFormatULID is a random 26-character Crockford base32 ULID.
	KeyFormatULID = "ulid"
	// KeyFormatHex32 is 32 lower-case hexadecimal digits.
	KeyFormatHex32 = "hex32"
	// KeyFormatPrefixed is "idem_" followed by 26 base32 characters, the
	// shape of prefixed ids (key_…, req_…).
	KeyFormatPrefixed = "prefixed"
)

// Key forms of ConformanceOptions.KeyForm: how a valid key is written in
// the key header.
const (
	// KeyFormBare sends the key as it is: Idempotency-Key: 8e03978e-….
	// The default, since most servers read the header's raw value.
	KeyFormBare = "bare"
	// KeyFormQuoted sends the key as an RFC 8941 §3.3.3 String:
	// Idempotency-Key: "8e03978e-…". draft-07 §2.1: "Idempotency-Key is
	// an Item Structured Header [RFC8941]. Its value MUST be a String."
	// A server that parses the header so treats a bare key, which is no
	// String, as a field that failed to parse.
	KeyFormQuoted = "quoted"
)

// KeyForms lists the key forms RunConformance accepts.
func KeyForms() []string { return []string{KeyFormBare, KeyFormQuoted} }

// keyForm reports whether form quotes keys; the quoted form needs a key
// header.
func keyForm(form string, d dialect.Dialect) (quoted bool, err error) {
	switch form {
	case "", KeyFormBare:
		return false, nil
	case KeyFormQuoted:
		if d.KeyHeader == "" {
			return false, fmt.Errorf("idemtest: key form %q: the %s dialect sends the key in the body member %q, not a header",
				form, d.Name, d.KeyField)
		}
		return true, nil
	}
	return false, fmt.Errorf("idemtest: key form %q unknown (known: %s)", form, strings.Join(KeyForms(), ", "))
}

// KeyFormats lists the key formats RunConformance accepts.
func KeyFormats() []string {
	return []string{KeyFormatUUID, KeyFormatULID, KeyFormatHex32, KeyFormatPrefixed}
}

// keyMaker returns a generator of fresh keys in format.
func keyMaker(format string) (func() string, error) {
	switch format {
	case "", KeyFormatUUID:
		return newUUID, nil
	case KeyFormatULID:
		return newULID, nil
	case KeyFormatHex32:
		return func() string { return hex.EncodeToString(randomBytes(16)) }, nil
	case KeyFormatPrefixed:
		return func() string { return "idem_" + strings.ToLower(rand.Text()) }, nil
	}
	return nil, fmt.Errorf("idemtest: key format %q unknown (known: %s)", format, strings.Join(KeyFormats(), ", "))
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return b
}

// newUUID returns a random version 4 UUID.
func newUUID() string {
	b := randomBytes(16)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// newULID returns 26 random Crockford base32 characters whose first one
// is at most 7, as a ULID's 128 bits require.
func newULID() string {
	b := randomBytes(26)
	out := make([]byte, 26)
	for i, v := range b {
		out[i] = crockford[int(v)%32]
	}
	out[0] = crockford[int(b[0])%8]
	return string(out)
}

// withByte returns k with the byte at i replaced by c: a key of the right
// shape and length that only the character check can refuse.
func withByte(k string, i int, c byte) string {
	b := []byte(k)
	b[i] = c
	return string(b)
}

// randomText returns 26 random base32 characters.
func randomText() string { return rand.Text() }
