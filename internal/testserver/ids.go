package testserver

import (
	"crypto/rand"
	"strings"
)

// Prefixes of the resource ids the payments API hands out.
const (
	paymentIDPrefix   = "pay_"
	operationIDPrefix = "op_"
)

// idRandomLength is the number of random characters after the prefix:
// 24 base32 characters carry 120 bits, enough that ids never collide and
// cannot be guessed.
const idRandomLength = 24

// newID returns prefix followed by idRandomLength lower-case base32
// characters from crypto/rand. crypto/rand.Text never fails: the runtime
// aborts the program rather than hand out predictable bytes.
func newID(prefix string) string {
	return prefix + strings.ToLower(rand.Text()[:idRandomLength])
}
