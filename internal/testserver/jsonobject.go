package testserver

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"
)

// scanObject is decodeObject for a body encoding/json has found valid:
// one pass over the bytes that picks out each member's raw value,
// instead of a token-by-token decoder with its allocations. ok is false
// when the body is not an object; the checks on member names and their
// messages are decodeObject's.
func scanObject(body []byte, allowed []string) (members map[string]json.RawMessage, rerr *requestError, ok bool) {
	i := skipSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return nil, nil, false
	}
	members = make(map[string]json.RawMessage, len(allowed))
	i = skipSpace(body, i+1)
	if body[i] == '}' {
		return members, nil, true
	}
	for {
		end := stringEnd(body, i)
		name, err := jsonString(body[i:end])
		if err != nil {
			return nil, invalidRequest("malformed JSON: %v", err), true
		}
		if !slices.Contains(allowed, name) {
			return nil, invalidRequest("unknown field %q", name), true
		}
		if _, dup := members[name]; dup {
			return nil, invalidRequest("field %q appears more than once", name), true
		}
		i = skipSpace(body, skipSpace(body, end)+1) // past the ':'
		end = valueEnd(body, i)
		members[name] = body[i:end:end]
		i = skipSpace(body, end)
		if body[i] == '}' {
			return members, nil, true
		}
		i = skipSpace(body, i+1) // past the ','
	}
}

// jsonString decodes raw, a valid JSON string literal: sliced out when
// it is plain UTF-8 without escapes (most are), else by encoding/json.
func jsonString(raw []byte) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' {
		inner := raw[1 : len(raw)-1]
		if bytes.IndexByte(inner, '\\') < 0 && bytes.IndexByte(inner, '"') < 0 && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string literal at b[i].
func stringEnd(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// valueEnd returns the index just past the valid JSON value at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = stringEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) && !bytes.ContainsRune([]byte(",}] \t\n\r"), rune(b[i])) {
			i++
		}
		return i
	}
}
