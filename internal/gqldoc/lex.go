// Package gqldoc reads GraphQL executable documents (the query string of a
// GraphQL request) as the October 2021 GraphQL specification defines them
// (https://spec.graphql.org/October2021/#sec-Language), with the byte
// offsets of what it reads, so that a caller can put text into the
// document, or take it out, without changing any other byte.
package gqldoc

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tokenKind is the kind of one lexical token.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokPunct
	tokName
	tokInt
	tokFloat
	tokString
)

// token is one lexical token of a document: its kind, its text (a
// string's decoded value) and where it starts and ends in the source.
type token struct {
	kind       tokenKind
	text       string
	start, end int
}

// SyntaxError says where and why a document does not parse.
type SyntaxError struct {
	// Offset is the byte offset in the document.
	Offset int
	// Reason says what was wrong there.
	Reason string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("GraphQL syntax error at byte %d: %s", e.Offset, e.Reason)
}

// lexer turns a source into tokens, skipping what the specification calls
// ignored tokens: whitespace, line terminators, commas, comments and a
// byte order mark.
type lexer struct {
	src string
	pos int
}

func (l *lexer) errAt(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

// next returns the next token.
func (l *lexer) next() (token, error) {
	l.skipIgnored()
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, start: l.pos, end: l.pos}, nil
	}
	start := l.pos
	c := l.src[l.pos]
	switch {
	case strings.IndexByte("!$&():=@[]{}|", c) >= 0:
		l.pos++
		return token{kind: tokPunct, text: string(c), start: start, end: l.pos}, nil
	case c == '.':
		if strings.HasPrefix(l.src[l.pos:], "...") {
			l.pos += 3
			return token{kind: tokPunct, text: "...", start: start, end: l.pos}, nil
		}
		return token{}, l.errAt(start, "unexpected '.'")
	case c == '_' || isLetter(c):
		for l.pos < len(l.src) && isNameByte(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tokName, text: l.src[start:l.pos], start: start, end: l.pos}, nil
	case c == '-' || isDigit(c):
		return l.number()
	case c == '"':
		if strings.HasPrefix(l.src[l.pos:], `"""`) {
			return l.blockString()
		}
		return l.quotedString()
	}
	r, _ := utf8.DecodeRuneInString(l.src[l.pos:])
	return token{}, l.errAt(start, "unexpected character %q", r)
}

func (l *lexer) skipIgnored() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			l.pos++
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' && l.src[l.pos] != '\r' {
				l.pos++
			}
		case strings.HasPrefix(l.src[l.pos:], "\uFEFF"):
			l.pos += len("\uFEFF")
		default:
			return
		}
	}
}

func (l *lexer) number() (token, error) {
	start := l.pos
	if l.src[l.pos] == '-' {
		l.pos++
	}
	digits := l.pos
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos == digits {
		return token{}, l.errAt(start, "a number needs a digit")
	}
	if l.pos-digits > 1 && l.src[digits] == '0' {
		return token{}, l.errAt(start, "a number cannot start with 0")
	}
	kind := tokInt
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		kind = tokFloat
		l.pos++
		frac := l.pos
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
		if l.pos == frac {
			return token{}, l.errAt(start, "a fraction needs a digit")
		}
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		kind = tokFloat
		l.pos++
		if l.pos < len(l.src) && (l.src[l.pos] == '+' || l.src[l.pos] == '-') {
			l.pos++
		}
		exp := l.pos
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
		if l.pos == exp {
			return token{}, l.errAt(start, "an exponent needs a digit")
		}
	}
	if l.pos < len(l.src) && (l.src[l.pos] == '.' || l.src[l.pos] == '_' || isLetter(l.src[l.pos])) {
		return token{}, l.errAt(l.pos, "a number cannot be followed by %q", l.src[l.pos])
	}
	return token{kind: kind, text: l.src[start:l.pos], start: start, end: l.pos}, nil
}

// quotedString reads a "…" string and decodes its escapes.
func (l *lexer) quotedString() (token, error) {
	start := l.pos
	l.pos++
	var b strings.Builder
	for {
		if l.pos >= len(l.src) {
			return token{}, l.errAt(start, "unterminated string")
		}
		c := l.src[l.pos]
		switch {
		case c == '"':
			l.pos++
			return token{kind: tokString, text: b.String(), start: start, end: l.pos}, nil
		case c == '\n' || c == '\r':
			return token{}, l.errAt(l.pos, "line break in a string")
		case c == '\\':
			if l.pos+1 >= len(l.src) {
				return token{}, l.errAt(l.pos, "unterminated escape")
			}
			e := l.src[l.pos+1]
			if i := strings.IndexByte(`"\/bfnrt`, e); i >= 0 {
				b.WriteByte("\"\\/\b\f\n\r\t"[i])
				l.pos += 2
				continue
			}
			if e != 'u' || l.pos+6 > len(l.src) {
				return token{}, l.errAt(l.pos, "invalid escape")
			}
			n, err := strconv.ParseUint(l.src[l.pos+2:l.pos+6], 16, 32)
			if err != nil {
				return token{}, l.errAt(l.pos, "invalid \\u escape")
			}
			b.WriteRune(rune(n))
			l.pos += 6
		case c < 0x20 && c != '\t':
			return token{}, l.errAt(l.pos, "control character in a string")
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
}

// blockString reads a """…""" string. Its value keeps its raw text (only
// \""" is unescaped); the common indentation the specification removes
// matters to no caller here.
func (l *lexer) blockString() (token, error) {
	start := l.pos
	l.pos += 3
	var b strings.Builder
	for {
		if l.pos >= len(l.src) {
			return token{}, l.errAt(start, "unterminated block string")
		}
		if strings.HasPrefix(l.src[l.pos:], `\"""`) {
			b.WriteString(`"""`)
			l.pos += 4
			continue
		}
		if strings.HasPrefix(l.src[l.pos:], `"""`) {
			l.pos += 3
			return token{kind: tokString, text: b.String(), start: start, end: l.pos}, nil
		}
		b.WriteByte(l.src[l.pos])
		l.pos++
	}
}

func isLetter(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool    { return '0' <= c && c <= '9' }
func isNameByte(c byte) bool { return c == '_' || isLetter(c) || isDigit(c) }
