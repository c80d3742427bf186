package server

import (
	"errors"
	"fmt"
	"strings"
)

// MaxKeyLength is the longest idempotency key the server accepts.
const MaxKeyLength = 255

// Errors ParseKey returns. Callers match them with errors.Is; the wrapped
// error carries a detail fit for a problem document.
var (
	// ErrMissingKey means the request carries no key: no key header, or
	// no key member in the body (WithKeyField).
	ErrMissingKey = errors.New("missing Idempotency-Key header: this route requires one")
	// ErrInvalidKey means the Idempotency-Key header is malformed.
	ErrInvalidKey = errors.New("malformed Idempotency-Key header")
)

// ParseKey reads the Idempotency-Key header values of a request, as
// http.Header.Values returns them. It accepts the bare form (6f1c…) and the
// IETF draft's form, an RFC 8941 Item whose value is a String ("6f1c…",
// with \" and \\ escapes, optionally followed by ;parameters, which are
// parsed and ignored); the quotes are not part of the key. Surrounding
// spaces and tabs are trimmed. A bare key is 1–255 characters of visible
// ASCII (0x21–0x7E); a quoted one may also hold spaces (0x20), as an RFC
// 8941 String may.
//
// No values is ErrMissingKey; more than one value, an empty or too long key,
// a character outside those ranges, broken quoting or malformed parameters
// is ErrInvalidKey.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrMissingKey
	case 1:
	default:
		return "", fmt.Errorf("%w: %d Idempotency-Key headers, want exactly one", ErrInvalidKey, len(values))
	}
	raw := strings.Trim(values[0], " \t")
	key, lowest := raw, byte(0x21)
	if strings.HasPrefix(raw, `"`) {
		var err error
		if key, err = parseSFStringItem(raw); err != nil {
			return "", err
		}
		lowest = 0x20
	}
	if err := validateKey(key, lowest); err != nil {
		return "", err
	}
	return key, nil
}

// validateKey checks the length of a key and that every byte lies between
// lowest and 0x7E.
func validateKey(key string, lowest byte) error {
	if key == "" {
		return fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: the key is %d characters long, at most %d are allowed", ErrInvalidKey, len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < lowest || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at position %d is not visible ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}
