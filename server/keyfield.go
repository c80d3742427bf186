package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// KeyProblem is why a key was refused, so an API can map each case to
// its own error code (see Answers.InvalidKey).
type KeyProblem int

// The ways a key can be refused.
const (
	KeyMalformed  KeyProblem = iota // repeated header, duplicate member, broken JSON
	KeyEmpty                        // present but empty
	KeyTooLong                      // longer than the limit
	KeyNotString                    // the body member is not a JSON string
	BodyNotObject                   // a body-field key, but the body is not a JSON object
	BodyNotUTF8                     // a body-field key, and a member name of the body is not UTF-8
)

// KeyError is a refused key. It matches ErrInvalidKey with errors.Is.
type KeyError struct {
	Problem KeyProblem
	Detail  string
}

// Error implements error.
func (e *KeyError) Error() string { return e.Detail }

// Unwrap makes a KeyError match ErrInvalidKey.
func (e *KeyError) Unwrap() error { return ErrInvalidKey }

// ProblemOf returns why err refused a key: KeyMalformed for an error that
// is not a *KeyError.
func ProblemOf(err error) KeyProblem {
	var ke *KeyError
	if errors.As(err, &ke) {
		return ke.Problem
	}
	return KeyMalformed
}

// SplitKeyField takes the member field out of a JSON object body. It
// returns the key and the body without that member (the other members in
// their order, their names and values byte for byte), which is what is
// fingerprinted and what the handler reads. A body without the member is
// ErrMissingKey; a member that is not a string of 1 to maxLen bytes, a
// body that is not one JSON object, or one with a member name that is not
// UTF-8 (RFC 8259 §8.1; decoding it would turn distinct names into one
// U+FFFD) is a *KeyError.
func SplitKeyField(body []byte, field string, maxLen int) (key string, rest []byte, err error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", nil, &KeyError{BodyNotObject, "the request body is not a JSON object"}
	}
	var raw json.RawMessage
	found := false
	out := []byte{'{'}
	for dec.More() {
		before := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return "", nil, &KeyError{BodyNotObject, "the request body is not a JSON object"}
		}
		name, _ := tok.(string)
		rawName := memberName(body[before:dec.InputOffset()])
		if !utf8.Valid(rawName) {
			return "", nil, &KeyError{BodyNotUTF8, "a member name of the request body is not valid UTF-8: send the body as UTF-8 (RFC 8259 section 8.1)"}
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", nil, &KeyError{BodyNotObject, "the request body is not a JSON object"}
		}
		if name == field {
			if found {
				return "", nil, &KeyError{KeyMalformed, field + " appears more than once"}
			}
			found, raw = true, value
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(append(out, rawName...), ':'), value...)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return "", nil, &KeyError{BodyNotObject, "the request body is not a JSON object"}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", nil, &KeyError{BodyNotObject, "the request body is not a JSON object"}
	}
	if !found {
		return "", nil, ErrMissingKey
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &key) != nil {
		return "", nil, &KeyError{KeyNotString, field + " must be a string"}
	}
	switch {
	case key == "":
		return "", nil, &KeyError{KeyEmpty, field + " is empty"}
	case len(key) > maxLen:
		return "", nil, &KeyError{KeyTooLong, fmt.Sprintf("%s is %d bytes long, at most %d are allowed", field, len(key), maxLen)}
	}
	return key, append(out, '}'), nil
}

// memberName returns the quoted member name that ends span, the input a
// Token call read: separators and white space, then the name.
func memberName(span []byte) []byte {
	if i := bytes.IndexByte(span, '"'); i >= 0 {
		return span[i:]
	}
	return span
}
