package server

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"net/http"
)

// headerFormatV1 leads the compact header encoding. A gob stream opens
// with a message length, which is one byte below 0x80 or a byte-count
// marker from 0xf8 up, so a byte in 0x80–0xf7 can never start one: the
// first byte alone tells the two formats apart.
const headerFormatV1 = 0x81

// errCorruptHeader is what DecodeHeader wraps for bytes it cannot read.
var errCorruptHeader = errors.New("stored response headers are corrupt")

// EncodeHeader returns h in a binary-safe form for a store to persist: a
// header value may hold any byte (obs-text included), and a replay must
// give it back unchanged, which JSON's UTF-8 strings cannot promise. The
// form is a version byte, then the number of names as a uvarint and, per
// name, its length-prefixed bytes, its number of values and each value
// length-prefixed. A nil header encodes to nil.
func EncodeHeader(h http.Header) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	n := 1 + uvarintLen(uint64(len(h)))
	for name, vs := range h {
		n += uvarintLen(uint64(len(name))) + len(name) + uvarintLen(uint64(len(vs)))
		for _, v := range vs {
			n += uvarintLen(uint64(len(v))) + len(v)
		}
	}
	b := make([]byte, 0, n)
	b = append(b, headerFormatV1)
	b = binary.AppendUvarint(b, uint64(len(h)))
	for name, vs := range h {
		b = binary.AppendUvarint(b, uint64(len(name)))
		b = append(b, name...)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b, nil
}

// DecodeHeader reverses EncodeHeader, and still reads the gob form that
// earlier versions stored; no bytes decode to a nil header, and bytes
// neither form produced are an error.
func DecodeHeader(b []byte) (http.Header, error) {
	switch {
	case len(b) == 0:
		return nil, nil
	case b[0] == headerFormatV1:
		h, err := decodeHeaderV1(b[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errCorruptHeader, err)
		}
		return h, nil
	default:
		return decodeHeaderGob(b)
	}
}

// decodeHeaderV1 reads the body of the compact form. Every string is
// cut from one copy of b and every value slice from one backing array,
// so a header costs four allocations however many fields it has.
func decodeHeaderV1(b []byte) (http.Header, error) {
	r := headerReader{s: string(b)}
	names := r.count(2) // a name takes at least its length and its count
	// Values of all names share one array, sized for the usual one value
	// a name.
	values := make([]string, 0, names)
	h := make(http.Header, names)
	for range names {
		name := r.str()
		nv := r.count(1)
		if r.err != nil {
			return nil, r.err
		}
		if _, dup := h[name]; dup {
			return nil, fmt.Errorf("name %q twice", name)
		}
		start := len(values)
		for range nv {
			values = append(values, r.str())
		}
		if r.err != nil {
			return nil, r.err
		}
		// The full slice expression keeps an append to one name's values
		// from writing over the next name's.
		h[name] = values[start:len(values):len(values)]
	}
	if r.err == nil && r.left() > 0 {
		return nil, fmt.Errorf("%d bytes after the last name", r.left())
	}
	return h, r.err
}

// headerReader walks the compact form; its first error sticks and every
// later read returns zero values.
type headerReader struct {
	s   string
	err error
}

func (r *headerReader) left() int { return len(r.s) }

func (r *headerReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	// binary.Uvarint wants bytes; the header is small, so decode by hand
	// instead of converting.
	var x uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			r.s = r.s[i+1:]
			return x | uint64(c)<<(7*i)
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
	r.err = errors.New("bad length")
	return 0
}

// count reads a number of items each taking at least minBytes, and
// rejects one the remaining bytes cannot hold, so a corrupt count cannot
// make a large allocation.
func (r *headerReader) count(minBytes int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.s)/minBytes) {
		r.err = fmt.Errorf("count %d exceeds the %d bytes left", n, len(r.s))
		return 0
	}
	return int(n)
}

func (r *headerReader) str() string {
	n := r.uvarint()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.s)) {
		r.err = fmt.Errorf("length %d exceeds the %d bytes left", n, len(r.s))
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

// decodeHeaderGob reads the gob form of earlier versions.
func decodeHeaderGob(b []byte) (http.Header, error) {
	var h http.Header
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&h); err != nil {
		return nil, fmt.Errorf("%w: %w", errCorruptHeader, err)
	}
	return h, nil
}
