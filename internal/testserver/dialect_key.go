package testserver

import (
	"fmt"
	"unicode/utf8"

	"github.com/idemkit/idem/server"
)

// plainHeaderKey reads a provider's key header: exactly one value, taken
// as sent (no quoting rules: the providers document none), 1 to
// MaxKeyLength characters. No value at all is ErrMissingKey.
func plainHeaderKey(d *Dialect, values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrMissingKey
	case 1:
	default:
		return "", &server.KeyError{Problem: server.KeyMalformed, Detail: fmt.Sprintf("%d %s headers, want exactly one", len(values), d.KeyHeader)}
	}
	key := values[0]
	if key == "" {
		return "", &server.KeyError{Problem: server.KeyEmpty, Detail: d.KeyHeader + " is empty"}
	}
	if n := utf8.RuneCountInString(key); n > d.MaxKeyLength {
		return "", &server.KeyError{Problem: server.KeyTooLong, Detail: fmt.Sprintf("%s is %d characters long, at most %d are allowed", d.KeyHeader, n, d.MaxKeyLength)}
	}
	return key, nil
}
