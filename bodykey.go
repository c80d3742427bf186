package idem

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/idemkit/idem/dialect"
)

// bodyKey returns the string value of the top-level member field of a JSON
// object body, and whether it has one. A body that is not a JSON object is
// an error: the dialect's key can only travel inside one.
func bodyKey(body []byte, field string) (string, bool, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return "", false, fmt.Errorf("%w: the dialect carries the key in the JSON body member %q, and the body is not a JSON object", ErrInvalidRequest, field)
	}
	raw, ok := members[field]
	if !ok {
		return "", false, nil
	}
	var key string
	if err := json.Unmarshal(raw, &key); err != nil {
		return "", false, fmt.Errorf("%w: body member %q is not a string", ErrInvalidRequest, field)
	}
	return key, true, nil
}

// withBodyKey returns body, a JSON object without member field, with
// field set to key as its first member. The rest of the body keeps its
// bytes, so what the caller wrote is what the server reads.
func withBodyKey(body []byte, field, key string) ([]byte, error) {
	open := bytes.IndexByte(body, '{')
	if open < 0 {
		return nil, fmt.Errorf("%w: the body is not a JSON object", ErrInvalidRequest)
	}
	name, err := json.Marshal(field)
	if err != nil {
		return nil, err
	}
	value, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	rest := body[open+1:]
	sep := []byte(",")
	if len(bytes.TrimSpace(rest)) > 0 && bytes.TrimSpace(rest)[0] == '}' {
		sep = nil // an empty object
	}
	out := make([]byte, 0, len(body)+len(name)+len(value)+2)
	out = append(out, body[:open+1]...)
	out = append(out, name...)
	out = append(out, ':')
	out = append(out, value...)
	out = append(out, sep...)
	return append(out, rest...), nil
}

// withoutBodyKey undoes withBodyKey: body without the member field set to
// key that withBodyKey put first, or body itself when it does not start
// so.
func withoutBodyKey(body []byte, field, key string) []byte {
	open := bytes.IndexByte(body, '{')
	if open < 0 {
		return body
	}
	name, err1 := json.Marshal(field)
	value, err2 := json.Marshal(key)
	if err1 != nil || err2 != nil {
		return body
	}
	member := append(append(append([]byte{}, name...), ':'), value...)
	rest := body[open+1:]
	if !bytes.HasPrefix(rest, member) {
		return body
	}
	rest = rest[len(member):]
	if len(rest) > 0 && rest[0] == ',' {
		rest = rest[1:]
	}
	out := make([]byte, 0, len(body))
	out = append(out, body[:open+1]...)
	return append(out, rest...)
}

// findBodyKey returns the key a request body carries where dialect d
// puts it (its KeyField member, or its SplitKey place), and whether it
// carries one. A body with no such place is an ErrInvalidRequest.
func findBodyKey(d *dialect.Dialect, body []byte) (string, bool, error) {
	if d.KeyField != "" {
		return bodyKey(body, d.KeyField)
	}
	key, _, found, err := d.SplitKey(body)
	if err != nil {
		return "", false, fmt.Errorf("%w: dialect %s: %w", ErrInvalidRequest, d.Name, err)
	}
	return key, found, nil
}

// placeBodyKey returns body with key placed where dialect d carries it.
func placeBodyKey(d *dialect.Dialect, body []byte, key string) ([]byte, error) {
	if d.KeyField != "" {
		return withBodyKey(body, d.KeyField, key)
	}
	out, err := d.PlaceKey(body, key)
	if err != nil {
		return nil, fmt.Errorf("%w: dialect %s: %w", ErrInvalidRequest, d.Name, err)
	}
	return out, nil
}

// unplacedBody undoes placeBodyKey: body without the key placed in it,
// or body itself when it does not carry key as placeBodyKey puts it.
func unplacedBody(d *dialect.Dialect, body []byte, key string) []byte {
	if d.KeyField != "" {
		return withoutBodyKey(body, d.KeyField, key)
	}
	found, rest, ok, err := d.SplitKey(body)
	if err != nil || !ok || found != key {
		return body
	}
	return rest
}

// bodyKeyPlace names where dialect d carries the key in a body, for
// errors.
func bodyKeyPlace(d *dialect.Dialect) string {
	if d.KeyField != "" {
		return fmt.Sprintf("member %q", d.KeyField)
	}
	return "dialect " + d.Name
}
