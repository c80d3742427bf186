package keystore

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// The members of a record's JSON that a recordSummary holds, in the order
// of summaryNames.
const (
	summaryName = iota
	summaryState
	summaryCreatedAt
	summaryUpdatedAt
	summaryPurged
	summaryNone // a member recordSummary has no field for
	summaryOdd  // a member name json.Unmarshal might match by folding
)

var summaryNames = [...]string{"name", "state", "created_at", "updated_at", "purged_at"}

// summaryMaxDepth bounds the nesting scanSummary follows; deeper input
// (never written by encodeRecord) is left to json.Unmarshal.
const summaryMaxDepth = 256

// scanSummary reads the summary out of a record's JSON with one pass and
// no reflection: decodeSummary runs in every Update's write transaction,
// where json.Unmarshal was most of the cost. It checks the whole input
// as strictly as encoding/json does, skipping the members it does not
// need. ok is false whenever the input is not plainly what encodeRecord
// writes: malformed JSON, another top-level value, a member name with an
// escape or one json.Unmarshal would match by case folding, a wanted
// member twice, a wanted string with an escape or invalid UTF-8, or a
// wanted value that is not a string. The caller then calls json.Unmarshal,
// so such input reads exactly as before, errors included.
func scanSummary(js []byte) (s recordSummary, ok bool) {
	p := jsonScan{js: js}
	p.space()
	if !p.take('{') {
		return s, false
	}
	var seen uint8
	p.space()
	if !p.take('}') {
		for {
			ks, ke, esc, ok := p.str()
			if !ok || esc {
				return s, false
			}
			field := summaryField(js[ks:ke])
			p.space()
			if !p.take(':') {
				return s, false
			}
			p.space()
			switch field {
			case summaryOdd:
				return s, false
			case summaryNone:
				if !p.value(0) {
					return s, false
				}
			default:
				if seen&(1<<field) != 0 {
					return s, false
				}
				seen |= 1 << field
				vs := p.i
				ss, se, esc, ok := p.str()
				if !ok || !s.set(field, js[vs:p.i], js[ss:se], esc) {
					return s, false
				}
			}
			p.space()
			if p.take(',') {
				p.space()
				continue
			}
			if !p.take('}') {
				return s, false
			}
			break
		}
	}
	p.space()
	return s, p.i == len(js)
}

// set stores a wanted member: raw is its JSON string, quotes included,
// text what lies between the quotes. false when json.Unmarshal must
// decide.
func (s *recordSummary) set(field int, raw, text []byte, escaped bool) bool {
	switch field {
	case summaryName, summaryState:
		if escaped || !utf8.Valid(text) {
			return false
		}
		if field == summaryName {
			s.Name = string(text)
		} else {
			s.State = internState(text)
		}
		return true
	}
	// time.Time.UnmarshalJSON is what json.Unmarshal calls, with the
	// same raw bytes.
	var t time.Time
	if t.UnmarshalJSON(raw) != nil {
		return false
	}
	switch field {
	case summaryCreatedAt:
		s.CreatedAt = t
	case summaryUpdatedAt:
		s.UpdatedAt = t
	default:
		s.Purged = t
	}
	return true
}

// internState returns the constant for a known state, so reading one
// allocates nothing.
func internState(b []byte) State {
	switch string(b) {
	case string(Pending):
		return Pending
	case string(Succeeded):
		return Succeeded
	case string(Accepted):
		return Accepted
	case string(Failed):
		return Failed
	case string(Expired):
		return Expired
	}
	return State(b)
}

// summaryField classifies a member name. json.Unmarshal matches names
// case-insensitively, with Unicode folding: a name that equals a wanted
// one only so (or any name with a non-ASCII byte) is summaryOdd.
func summaryField(name []byte) int {
	switch string(name) {
	case "name":
		return summaryName
	case "state":
		return summaryState
	case "created_at":
		return summaryCreatedAt
	case "updated_at":
		return summaryUpdatedAt
	case "purged_at":
		return summaryPurged
	}
	for _, c := range name {
		if c >= utf8.RuneSelf {
			return summaryOdd
		}
	}
	for _, w := range summaryNames {
		if len(name) == len(w) && bytes.EqualFold(name, []byte(w)) {
			return summaryOdd
		}
	}
	return summaryNone
}

// jsonScan is a position in JSON text that is checked by the grammar of
// RFC 8259, as encoding/json's scanner checks it.
type jsonScan struct {
	js []byte
	i  int
}

// space skips JSON whitespace.
func (p *jsonScan) space() {
	for p.i < len(p.js) {
		switch p.js[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// take consumes c if it is next.
func (p *jsonScan) take(c byte) bool {
	if p.i < len(p.js) && p.js[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str consumes a string and returns the bounds of its text (between the
// quotes) and whether it holds an escape.
func (p *jsonScan) str() (start, end int, escaped, ok bool) {
	if !p.take('"') {
		return 0, 0, false, false
	}
	start = p.i
	for p.i < len(p.js) {
		c := p.js[p.i]
		switch {
		case jsonStrPlain[c]:
			p.i++
		case c == '"':
			end = p.i
			p.i++
			return start, end, escaped, true
		case c == '\\':
			escaped = true
			if !p.escape() {
				return 0, 0, false, false
			}
		default: // a control character
			return 0, 0, false, false
		}
	}
	return 0, 0, false, false
}

// jsonStrPlain marks the bytes that stand for themselves in a JSON
// string: all but control characters, the quote and the backslash.
var jsonStrPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escape consumes one escape sequence, the backslash first.
func (p *jsonScan) escape() bool {
	p.i++
	if p.i >= len(p.js) {
		return false
	}
	switch p.js[p.i] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		p.i++
		return true
	case 'u':
		if p.i+5 > len(p.js) {
			return false
		}
		for _, h := range p.js[p.i+1 : p.i+5] {
			if !isHex(h) {
				return false
			}
		}
		p.i += 5
		return true
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// value consumes any one JSON value nested depth deep.
func (p *jsonScan) value(depth int) bool {
	if p.i >= len(p.js) {
		return false
	}
	switch c := p.js[p.i]; {
	case c == '"':
		_, _, _, ok := p.str()
		return ok
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || isDigit(c):
		return p.number()
	}
	return false
}

// object consumes an object, the brace first.
func (p *jsonScan) object(depth int) bool {
	if depth > summaryMaxDepth {
		return false
	}
	p.i++
	p.space()
	if p.take('}') {
		return true
	}
	for {
		if _, _, _, ok := p.str(); !ok {
			return false
		}
		p.space()
		if !p.take(':') {
			return false
		}
		p.space()
		if !p.value(depth) {
			return false
		}
		p.space()
		if p.take('}') {
			return true
		}
		if !p.take(',') {
			return false
		}
		p.space()
	}
}

// array consumes an array, the bracket first.
func (p *jsonScan) array(depth int) bool {
	if depth > summaryMaxDepth {
		return false
	}
	p.i++
	p.space()
	if p.take(']') {
		return true
	}
	for {
		if !p.value(depth) {
			return false
		}
		p.space()
		if p.take(']') {
			return true
		}
		if !p.take(',') {
			return false
		}
		p.space()
	}
}

// literal consumes word (true, false or null).
func (p *jsonScan) literal(word string) bool {
	if len(p.js)-p.i < len(word) || string(p.js[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonScan) number() bool {
	p.take('-')
	switch {
	case p.take('0'):
	case p.i < len(p.js) && '1' <= p.js[p.i] && p.js[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.take('.') {
		if p.digits() == 0 {
			return false
		}
	}
	if p.take('e') || p.take('E') {
		if !p.take('+') {
			p.take('-')
		}
		if p.digits() == 0 {
			return false
		}
	}
	return true
}

// digits consumes decimal digits and returns how many.
func (p *jsonScan) digits() int {
	n := p.i
	for p.i < len(p.js) && isDigit(p.js[p.i]) {
		p.i++
	}
	return p.i - n
}
