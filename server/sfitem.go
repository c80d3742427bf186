package server

import (
	"fmt"
	"strings"
)

// parseSFStringItem parses s, a field value starting with a DQUOTE, as an
// RFC 8941 §3.3 Item whose bare item is a String (§3.3.3): the quoted
// string, then any parameters (§3.1.2), then nothing. draft-07 §2.1 makes
// the key "an Item Structured Header [RFC8941]. Its value MUST be a
// String." and defines no parameter, so parameters are parsed, to refuse
// a malformed field, and ignored: the key is the string alone.
func parseSFStringItem(s string) (string, error) {
	key, rest, err := parseSFString(s)
	if err != nil {
		return "", err
	}
	if err := skipSFParameters(rest); err != nil {
		return "", err
	}
	return key, nil
}

// parseSFString decodes the RFC 8941 String at the start of s: a DQUOTE,
// characters 0x20–0x7E with only \" and \\ as escapes, and a closing
// DQUOTE. It returns the decoded string and what follows it.
func parseSFString(s string) (str, rest string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			i++
			if i >= len(s) || (s[i] != '"' && s[i] != '\\') {
				return "", "", fmt.Errorf(`%w: a quoted key may only escape \" and \\`, ErrInvalidKey)
			}
			b.WriteByte(s[i])
		case c == '"':
			return b.String(), s[i+1:], nil
		case c < 0x20 || c > 0x7e:
			return "", "", fmt.Errorf("%w: byte 0x%02x is not allowed in a quoted key", ErrInvalidKey, c)
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("%w: quoted key has no closing quote", ErrInvalidKey)
}

// skipSFParameters checks that s is RFC 8941 parameters and nothing else:
// *( ";" *SP key [ "=" bare-item ] ).
func skipSFParameters(s string) error {
	for s != "" {
		if s[0] != ';' {
			return fmt.Errorf("%w: characters after the closing quote (only ;parameters may follow it)", ErrInvalidKey)
		}
		s = strings.TrimLeft(s[1:], " ")
		n := sfKeyLength(s)
		if n == 0 {
			return fmt.Errorf("%w: a parameter after the key needs a name of lower-case letters, digits, _ - . *", ErrInvalidKey)
		}
		s = s[n:]
		if s == "" || s[0] != '=' {
			continue // a parameter without a value is Boolean true
		}
		var err error
		if s, err = skipSFBareItem(s[1:]); err != nil {
			return err
		}
	}
	return nil
}

// sfKeyLength is the length of the RFC 8941 key at the start of s:
// ( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" ).
func sfKeyLength(s string) int {
	if s == "" || !(isLower(s[0]) || s[0] == '*') {
		return 0
	}
	n := 1
	for n < len(s) && (isLower(s[n]) || isDigit(s[n]) || strings.IndexByte("_-.*", s[n]) >= 0) {
		n++
	}
	return n
}

// skipSFBareItem returns what follows the RFC 8941 bare item at the start
// of s: an Integer or Decimal, a String, a Token, a Byte Sequence or a
// Boolean.
func skipSFBareItem(s string) (string, error) {
	bad := fmt.Errorf("%w: a parameter value after the key is not a Structured Field item", ErrInvalidKey)
	switch {
	case s == "":
		return "", bad
	case s[0] == '-' || isDigit(s[0]):
		return skipSFNumber(s, bad)
	case s[0] == '"':
		_, rest, err := parseSFString(s)
		return rest, err
	case s[0] == '*' || isAlpha(s[0]):
		n := 1
		for n < len(s) && (isTChar(s[n]) || s[n] == ':' || s[n] == '/') {
			n++
		}
		return s[n:], nil
	case s[0] == ':':
		end := strings.IndexByte(s[1:], ':')
		if end < 0 {
			return "", bad
		}
		for i := 1; i <= end; i++ {
			if c := s[i]; !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
				return "", bad
			}
		}
		return s[end+2:], nil
	case s[0] == '?':
		if len(s) < 2 || (s[1] != '0' && s[1] != '1') {
			return "", bad
		}
		return s[2:], nil
	}
	return "", bad
}

// skipSFNumber skips an RFC 8941 Integer (at most 15 digits) or Decimal
// (at most 12 digits, a dot, 1 to 3 digits).
func skipSFNumber(s string, bad error) (string, error) {
	i := 0
	if s[0] == '-' {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	whole := i - start
	if whole == 0 {
		return "", bad
	}
	if i == len(s) || s[i] != '.' {
		if whole > 15 {
			return "", bad
		}
		return s[i:], nil
	}
	i++
	fracStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if whole > 12 || i-fracStart < 1 || i-fracStart > 3 {
		return "", bad
	}
	return s[i:], nil
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return isLower(c | 0x20) }

// isTChar reports whether c is an RFC 9110 tchar.
func isTChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
