package testserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// keyProblem is why a provider dialect refused a key; each provider maps
// it to its own error code.
type keyProblem int

const (
	keyMalformed  keyProblem = iota // repeated header, duplicate member, broken JSON
	keyEmpty                        // present but empty
	keyTooLong                      // longer than the dialect's MaxKeyLength
	keyNotString                    // the body member is not a JSON string
	bodyNotObject                   // a body-field dialect got a body that is not a JSON object
)

// keyError is a refused key. It matches ErrInvalidKey with errors.Is.
type keyError struct {
	problem keyProblem
	detail  string
}

func (e *keyError) Error() string { return e.detail }

func (e *keyError) Unwrap() error { return ErrInvalidKey }

// problemOf returns why err refused a key (keyMalformed for an error
// that is not a keyError).
func problemOf(err error) keyProblem {
	var ke *keyError
	if errors.As(err, &ke) {
		return ke.problem
	}
	return keyMalformed
}

// plainHeaderKey reads a provider's key header: exactly one value, taken
// as sent (no quoting rules: the providers document none), 1 to
// MaxKeyLength characters. No value at all is ErrMissingKey.
func plainHeaderKey(d *Dialect, values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrMissingKey
	case 1:
	default:
		return "", &keyError{keyMalformed, fmt.Sprintf("%d %s headers, want exactly one", len(values), d.KeyHeader)}
	}
	key := values[0]
	if key == "" {
		return "", &keyError{keyEmpty, d.KeyHeader + " is empty"}
	}
	if n := utf8.RuneCountInString(key); n > d.MaxKeyLength {
		return "", &keyError{keyTooLong, fmt.Sprintf("%s is %d characters long, at most %d are allowed", d.KeyHeader, n, d.MaxKeyLength)}
	}
	return key, nil
}

// bodyFieldKey takes the key member out of a JSON object body. It returns
// the key and the body without that member (the other members in their
// order, their values byte for byte), which is what is fingerprinted and
// what the handler reads. A body without the member is ErrMissingKey.
func bodyFieldKey(d *Dialect, body []byte) (key string, rest []byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil, &keyError{bodyNotObject, "the request body is not a JSON object"}
	}
	var raw json.RawMessage
	found := false
	out := []byte{'{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", nil, &keyError{bodyNotObject, "the request body is not a JSON object"}
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", nil, &keyError{bodyNotObject, "the request body is not a JSON object"}
		}
		if name == d.KeyField {
			if found {
				return "", nil, &keyError{keyMalformed, d.KeyField + " appears more than once"}
			}
			found, raw = true, value
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		quoted, _ := json.Marshal(name)
		out = append(append(append(out, quoted...), ':'), value...)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", nil, &keyError{bodyNotObject, "the request body is not a JSON object"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", nil, &keyError{bodyNotObject, "the request body is not a JSON object"}
	}
	if !found {
		return "", nil, ErrMissingKey
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &key) != nil {
		return "", nil, &keyError{keyNotString, d.KeyField + " must be a string"}
	}
	switch {
	case key == "":
		return "", nil, &keyError{keyEmpty, d.KeyField + " is empty"}
	case len(key) > d.MaxKeyLength:
		return "", nil, &keyError{keyTooLong, fmt.Sprintf("%s is %d bytes long, at most %d are allowed", d.KeyField, len(key), d.MaxKeyLength)}
	}
	return key, append(out, '}'), nil
}
