package canonjson

import (
	"bytes"
	"slices"
)

// fastCanonicalDepth bounds the nesting the fast path follows; deeper
// documents are left to jcs.Transform.
const fastCanonicalDepth = 32

// maxFastIntegerDigits is the number of digits up to which an integer is its
// own canonical form: below 10^15 every integer is an exact float64 and
// ECMAScript prints it digit for digit.
const maxFastIntegerDigits = 15

// fastCanonical appends to dst the canonical form of the simple subset of
// JSON described at Canonical, or reports ok=false for anything outside
// it (which is not necessarily invalid JSON).
func fastCanonical(dst, body []byte) ([]byte, bool) {
	p := fastParser{in: body, out: dst}
	p.skipSpace()
	if !p.value(0) {
		return nil, false
	}
	p.skipSpace()
	if p.pos != len(p.in) {
		return nil, false
	}
	return p.out, true
}

type fastParser struct {
	in  []byte
	pos int
	out []byte
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

func (p *fastParser) skipSpace() {
	for p.pos < len(p.in) && isJSONSpace(p.in[p.pos]) {
		p.pos++
	}
}

// value copies one value at pos to out, canonical; white space before it
// has been skipped.
func (p *fastParser) value(depth int) bool {
	if p.pos >= len(p.in) {
		return false
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return depth < fastCanonicalDepth && p.object(depth+1)
	case c == '[':
		return depth < fastCanonicalDepth && p.array(depth+1)
	case c == '"':
		_, ok := p.str()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		return p.integer()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

// endsToken reports whether a number or literal may end at pos: at the end
// of input, white space or a closing or separating character.
func (p *fastParser) endsToken() bool {
	if p.pos == len(p.in) {
		return true
	}
	c := p.in[p.pos]
	return c == ',' || c == ']' || c == '}' || isJSONSpace(c)
}

func (p *fastParser) literal(word string) bool {
	if !bytes.HasPrefix(p.in[p.pos:], []byte(word)) {
		return false
	}
	p.pos += len(word)
	p.out = append(p.out, word...)
	return p.endsToken()
}

// integer copies an integer of at most maxFastIntegerDigits digits without
// leading zeros; "-0" (canonically "0") and anything with a fraction or
// an exponent are left to jcs.
func (p *fastParser) integer() bool {
	start := p.pos
	if p.in[p.pos] == '-' {
		p.pos++
	}
	digits := p.pos
	for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
		p.pos++
	}
	n := p.pos - digits
	switch {
	case n == 0 || n > maxFastIntegerDigits:
		return false
	case p.in[digits] == '0' && (n > 1 || digits > start):
		return false // a leading zero, or -0
	}
	p.out = append(p.out, p.in[start:p.pos]...)
	return p.endsToken()
}

// str copies a string of printable ASCII without escapes, which is its own
// canonical form, and returns the span of its content in out.
func (p *fastParser) str() (content [2]int, ok bool) {
	start := p.pos
	p.pos++ // the opening quote
	for p.pos < len(p.in) {
		switch c := p.in[p.pos]; {
		case c == '"':
			p.pos++
			from := len(p.out) + 1
			p.out = append(p.out, p.in[start:p.pos]...)
			return [2]int{from, len(p.out) - 1}, true
		case c < 0x20 || c > 0x7e || c == '\\':
			return content, false
		}
		p.pos++
	}
	return content, false
}

func (p *fastParser) array(depth int) bool {
	p.pos++ // '['
	p.out = append(p.out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return true
	}
	for {
		p.skipSpace()
		if !p.value(depth) {
			return false
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return false
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			return true
		default:
			return false
		}
	}
}

// member is where one object member landed in out: its whole `"name":value`
// text and the name's content.
type member struct {
	start, end int
	name       [2]int
}

func (p *fastParser) object(depth int) bool {
	p.pos++ // '{'
	p.out = append(p.out, '{')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, '}')
		return true
	}
	// Most objects have few members: keep their spans on the stack.
	var spans [8]member
	members := spans[:0]
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return false
		}
		m := member{start: len(p.out)}
		name, ok := p.str()
		if !ok {
			return false
		}
		m.name = name
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return false
		}
		p.pos++
		p.out = append(p.out, ':')
		p.skipSpace()
		if !p.value(depth) {
			return false
		}
		m.end = len(p.out)
		members = append(members, m)
		p.skipSpace()
		if p.pos >= len(p.in) {
			return false
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case '}':
			p.pos++
			if !p.sortMembers(members) {
				return false
			}
			p.out = append(p.out, '}')
			return true
		default:
			return false
		}
	}
}

// sortMembers puts the members just written to out in canonical order.
// For ASCII names, byte order is the UTF-16 code unit order RFC 8785
// sorts by. A name given twice is left to jcs, which rejects it.
func (p *fastParser) sortMembers(members []member) bool {
	name := func(m member) []byte { return p.out[m.name[0]:m.name[1]] }
	sorted := true
	for i := 1; i < len(members); i++ {
		switch bytes.Compare(name(members[i-1]), name(members[i])) {
		case 0:
			return false
		case 1:
			sorted = false
		}
	}
	if sorted {
		return true
	}
	order := slices.Clone(members)
	slices.SortFunc(order, func(a, b member) int { return bytes.Compare(name(a), name(b)) })
	for i := 1; i < len(order); i++ {
		if bytes.Equal(name(order[i-1]), name(order[i])) {
			return false
		}
	}
	// Same members, same total length: rewrite the region in place.
	from, to := members[0].start, members[len(members)-1].end
	region := slices.Clone(p.out[from:to])
	w := from
	for i, m := range order {
		if i > 0 {
			p.out[w] = ','
			w++
		}
		w += copy(p.out[w:], region[m.start-from:m.end-from])
	}
	return true
}
