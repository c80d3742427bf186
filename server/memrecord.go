package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/http"
)

// Flags of an encoded response: nil and empty are kept apart, so a
// replay gives back exactly what was stored.
const (
	responseHeaderNil byte = 1 << iota
	responseBodyNil
)

// encodeResponse writes r as one byte slice: a flags byte, the status, the
// resource id, the header (name count, then each name and its values,
// with a nil value list apart from an empty one) and the body, every
// string and the body prefixed by its length as a uvarint.
func encodeResponse(r Response) []byte {
	return appendResponse(make([]byte, 0, encodedResponseLen(r)), r)
}

// encodedResponseLen is the length of encodeResponse(r).
func encodedResponseLen(r Response) int {
	size := 1 + uvarintLen(uint64(r.Status)) + stringLen(r.ResourceID) + uvarintLen(uint64(len(r.Header))) + uvarintLen(uint64(len(r.Body))) + len(r.Body)
	for name, values := range r.Header {
		size += stringLen(name)
		if values == nil {
			size++
			continue
		}
		size += uvarintLen(uint64(len(values)) + 1)
		for _, v := range values {
			size += stringLen(v)
		}
	}
	return size
}

// appendResponse appends the encoding of r (see encodeResponse) to b.
func appendResponse(b []byte, r Response) []byte {
	var flags byte
	if r.Header == nil {
		flags |= responseHeaderNil
	}
	if r.Body == nil {
		flags |= responseBodyNil
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, uint64(r.Status))
	b = appendString(b, r.ResourceID)
	b = binary.AppendUvarint(b, uint64(len(r.Header)))
	for name, values := range r.Header {
		b = appendString(b, name)
		if values == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		b = binary.AppendUvarint(b, uint64(len(values))+1)
		for _, v := range values {
			b = appendString(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(r.Body)))
	return append(b, r.Body...)
}

// uvarintLen is the size of v as a uvarint.
func uvarintLen(v uint64) int {
	n := 1
	for ; v >= 0x80; v >>= 7 {
		n++
	}
	return n
}

// stringLen is the size of s with its length prefix.
func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// errCorruptResponse means bytes encodeResponse did not write; the store
// only decodes what it encoded, so it is never expected.
var errCorruptResponse = errors.New("server: corrupt stored response")

// decodeResponse reverses encodeResponse. Its body is cut from one copy
// of b (capped, so an append moves it), and all header values share one
// array, so a replay costs few allocations however many headers it has.
func decodeResponse(b []byte) (Response, error) {
	b = bytes.Clone(b)
	d := responseDecoder{b: b}
	flags := d.byte()
	resp := Response{Status: int(d.uvarint()), ResourceID: d.string()}
	names := d.uvarint()
	if flags&responseHeaderNil == 0 && d.err == nil {
		resp.Header = make(http.Header, min(names, uint64(len(b))))
	}
	var all []string
	if d.err == nil {
		all = make([]string, 0, min(names, uint64(len(d.b))))
	}
	for range names {
		name := d.string()
		count := d.uvarint()
		if d.err != nil || resp.Header == nil {
			d.err = errCorruptResponse
			break
		}
		if count == 0 {
			resp.Header[name] = nil
			continue
		}
		if count-1 > uint64(len(d.b)) { // every value takes at least its length byte
			d.err = errCorruptResponse
			break
		}
		start := len(all)
		for range count - 1 {
			all = append(all, d.string())
		}
		resp.Header[name] = all[start:len(all):len(all)]
	}
	body := d.bytes()
	if flags&responseBodyNil == 0 && d.err == nil {
		resp.Body = body[:len(body):len(body)]
	}
	if d.err != nil || len(d.b) != 0 {
		return Response{}, errCorruptResponse
	}
	return resp, nil
}

// responseDecoder reads the fields encodeResponse wrote; after the first
// error every read returns a zero value and err stays set.
type responseDecoder struct {
	b   []byte
	err error
}

func (d *responseDecoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.err = errCorruptResponse
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *responseDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorruptResponse
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *responseDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errCorruptResponse
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *responseDecoder) string() string { return string(d.bytes()) }
