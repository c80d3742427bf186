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
// quoted Structured Field String of the IETF draft ("6f1c…", with \" and \\
// escapes); the quotes are not part of the key. Surrounding spaces and tabs
// are trimmed. The key must then be 1–255 characters of visible ASCII
// (0x21–0x7E).
//
// No values is ErrMissingKey; more than one value, an empty or too long key,
// a character outside visible ASCII, or broken quoting is ErrInvalidKey.
func ParseKey(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrMissingKey
	case 1:
	default:
		return "", fmt.Errorf("%w: %d Idempotency-Key headers, want exactly one", ErrInvalidKey, len(values))
	}
	raw := strings.Trim(values[0], " \t")
	key := raw
	if strings.HasPrefix(raw, `"`) {
		var err error
		if key, err = unquoteSFString(raw); err != nil {
			return "", err
		}
	}
	if err := validateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// unquoteSFString decodes an RFC 8941 String: a DQUOTE, printable ASCII
// with only \" and \\ as escapes, and a closing DQUOTE that ends the value.
func unquoteSFString(s string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", fmt.Errorf(`%w: a quoted key may only escape \" and \\`, ErrInvalidKey)
			}
			b.WriteByte(s[i])
		case c == '"':
			if i != len(s)-1 {
				return "", fmt.Errorf("%w: characters after the closing quote", ErrInvalidKey)
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", fmt.Errorf("%w: byte 0x%02x is not allowed in a quoted key", ErrInvalidKey, c)
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("%w: quoted key has no closing quote", ErrInvalidKey)
}

// validateKey checks the length and alphabet of an unquoted key.
func validateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: the key is empty", ErrInvalidKey)
	}
	if len(key) > MaxKeyLength {
		return fmt.Errorf("%w: the key is %d characters long, at most %d are allowed", ErrInvalidKey, len(key), MaxKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: byte 0x%02x at position %d is not visible ASCII", ErrInvalidKey, c, i)
		}
	}
	return nil
}
