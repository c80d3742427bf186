package draftserver

import (
	"errors"
	"strings"
)

// errNotString is returned for a header value that is not an RFC 8941
// Item whose bare item is a String.
var errNotString = errors.New("not an RFC 8941 String item")

// parseKey reads the Idempotency-Key field value.
//
// draft-07 §2.1: "Idempotency-Key is an Item Structured Header [RFC8941].
// Its value MUST be a String (Section 3.3.3 of [RFC8941])."
//
// The value is parsed as RFC 8941 §4.2 parses an Item: a bare item (here
// a String, §4.2.5) then Parameters (§4.2.3.2), with surrounding spaces
// discarded. The Parameters are not part of the key. Several field lines
// arrive joined by ", " (RFC 9110 §5.3), which no Item parses.
func parseKey(lines []string) (string, error) {
	if len(lines) == 0 {
		return "", errNotString
	}
	input := strings.Trim(strings.Join(lines, ", "), " ")
	key, rest, err := parseString(input)
	if err != nil {
		return "", err
	}
	if rest, err = skipParameters(rest); err != nil {
		return "", err
	}
	if rest != "" {
		return "", errNotString
	}
	return key, nil
}

// parseString is RFC 8941 §4.2.5: a DQUOTE, then printable ASCII with
// "\" escaping only DQUOTE and "\", then a DQUOTE.
func parseString(input string) (value, rest string, err error) {
	if !strings.HasPrefix(input, `"`) {
		return "", "", errNotString
	}
	var b strings.Builder
	for i := 1; i < len(input); i++ {
		c := input[i]
		switch {
		case c == '\\':
			i++
			if i == len(input) || (input[i] != '"' && input[i] != '\\') {
				return "", "", errNotString
			}
			b.WriteByte(input[i])
		case c == '"':
			return b.String(), input[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", errNotString
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errNotString
}

// skipParameters is RFC 8941 §4.2.3.2: any number of ";" OWS key
// ["=" bare-item], returning what follows them.
func skipParameters(input string) (string, error) {
	for strings.HasPrefix(input, ";") {
		input = strings.TrimLeft(input[1:], " ")
		n := paramKeyLen(input)
		if n == 0 {
			return "", errNotString
		}
		input = input[n:]
		if strings.HasPrefix(input, "=") {
			var err error
			if input, err = skipBareItem(input[1:]); err != nil {
				return "", err
			}
		}
	}
	return input, nil
}

// paramKeyLen is the length of the RFC 8941 §4.2.3.3 key at the start of
// input: lcalpha or "*", then lcalpha, DIGIT, "_", "-", "." or "*".
func paramKeyLen(input string) int {
	if input == "" || !(isLower(input[0]) || input[0] == '*') {
		return 0
	}
	n := 1
	for n < len(input) && (isLower(input[n]) || isDigit(input[n]) || strings.IndexByte("_-.*", input[n]) >= 0) {
		n++
	}
	return n
}

// skipBareItem skips a parameter's value: a String, a Boolean, a number
// or a Token (RFC 8941 §4.2.3.1, Byte Sequences included).
func skipBareItem(input string) (string, error) {
	switch {
	case strings.HasPrefix(input, `"`):
		_, rest, err := parseString(input)
		return rest, err
	case strings.HasPrefix(input, "?0"), strings.HasPrefix(input, "?1"):
		return input[2:], nil
	case strings.HasPrefix(input, ":"):
		end := strings.IndexByte(input[1:], ':')
		if end < 0 {
			return "", errNotString
		}
		return input[end+2:], nil
	}
	n := 0
	for n < len(input) && input[n] > 0x20 && input[n] < 0x7f && strings.IndexByte(`;,"()<>@[\]{}=`+" ", input[n]) < 0 {
		n++
	}
	if n == 0 {
		return "", errNotString
	}
	return input[n:], nil
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
