package redisstore

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem/server"
)

// A record is one Redis string, written by one SET … PXAT:
//
//	R<lease>:<created>:<token>:<fingerprint>      a reservation
//	C<expires>:<created>:<len>:<fingerprint><response>  a completed record
//
// Times are the Redis server's Unix milliseconds. The scripts read only
// the state letter, the time after it and, for a reservation, the token
// and fingerprint; the response part is the store's own (see
// appendResponse), which the scripts copy without reading. Records of
// earlier versions are hashes (see parseHashRecord), still read, and
// rewritten as strings when they are next written.

// errBadRecord means a stored record could not be read.
var errBadRecord = errors.New("malformed stored record")

// encodeResponse returns the response part of a completed record:
//
//	<status>:<len>:<resource id><header><body>
//
// where the header is <n>: (0 for no header, else 1 + its names), then
// per name <len>:<name><m>: (0 for no values slice, else 1 + its values)
// and <len>:<value> per value. Lengths are in bytes, so nothing in a
// header, resource id or body needs escaping.
func encodeResponse(r server.Response) []byte {
	size := 32 + len(r.ResourceID) + len(r.Body)
	for name, values := range r.Header {
		size += len(name) + 16
		for _, v := range values {
			size += len(v) + 8
		}
	}
	b := make([]byte, 0, size)
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ':')
	b = appendField(b, r.ResourceID)
	b = appendCount(b, r.Header != nil, len(r.Header))
	for name, values := range r.Header {
		b = appendField(b, name)
		b = appendCount(b, values != nil, len(values))
		for _, v := range values {
			b = appendField(b, v)
		}
	}
	return append(b, r.Body...)
}

// appendField appends <len>:s.
func appendField(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// appendCount appends <n>:, 0 for a nil map or slice, else 1 + n, so a
// nil header and an empty one come back as they went in.
func appendCount(b []byte, present bool, n int) []byte {
	if !present {
		return append(b, '0', ':')
	}
	b = strconv.AppendInt(b, int64(n)+1, 10)
	return append(b, ':')
}

// parseStringRecord reads a record in the string form.
func parseStringRecord(scope server.Scope, key, v string) (*server.Record, error) {
	if v == "" {
		return nil, errBadRecord
	}
	rd := reader{s: v[1:]}
	rec := &server.Record{Scope: scope, Key: key}
	switch v[0] {
	case 'R':
		rec.State = server.StateReserved
		rec.LeaseExpires = time.UnixMilli(rd.number())
		rec.CreatedAt = time.UnixMilli(rd.number())
		rec.Token = rd.upTo(':')
		rec.Fingerprint = rd.rest()
	case 'C':
		rec.State = server.StateCompleted
		rec.ExpiresAt = time.UnixMilli(rd.number())
		rec.CreatedAt = time.UnixMilli(rd.number())
		rec.Fingerprint = rd.field()
		rec.Response = rd.response()
	default:
		return nil, errBadRecord
	}
	if rd.bad {
		return nil, fmt.Errorf("%w (state %q)", errBadRecord, v[:1])
	}
	return rec, nil
}

// reader reads a record's fields in order; a field that is not there
// sets bad and reads as empty, so one check at the end covers them all.
type reader struct {
	s   string
	bad bool
}

// upTo returns the text before the next sep, consuming both.
func (r *reader) upTo(sep byte) string {
	i := strings.IndexByte(r.s, sep)
	if i < 0 {
		r.bad = true
		return ""
	}
	out := r.s[:i]
	r.s = r.s[i+1:]
	return out
}

// number reads a decimal integer ending in ':'.
func (r *reader) number() int64 {
	n, err := strconv.ParseInt(r.upTo(':'), 10, 64)
	if err != nil {
		r.bad = true
	}
	return n
}

// count reads a count of appendCount: present, and how many.
func (r *reader) count() (bool, int) {
	n := r.number()
	if n < 0 || n > int64(len(r.s))+1 { // each item takes at least a byte
		r.bad = true
		return false, 0
	}
	return n > 0, int(max(n-1, 0))
}

// field reads one <len>:text.
func (r *reader) field() string {
	n := r.number()
	if n < 0 || n > int64(len(r.s)) {
		r.bad = true
		return ""
	}
	out := r.s[:n]
	r.s = r.s[n:]
	return out
}

// rest returns what is left.
func (r *reader) rest() string {
	out := r.s
	r.s = ""
	return out
}

// response reads encodeResponse's form. The body and header are copies,
// so the record owns them.
func (r *reader) response() *server.Response {
	resp := &server.Response{Status: int(r.number())}
	resp.ResourceID = r.field()
	if present, n := r.count(); present {
		resp.Header = make(http.Header, n)
		for range n {
			name := r.field()
			hasValues, m := r.count()
			var values []string
			if hasValues {
				values = make([]string, m)
				for j := range values {
					values[j] = r.field()
				}
			}
			if r.bad {
				return nil
			}
			resp.Header[name] = values
		}
	}
	resp.Body = []byte(r.rest())
	return resp
}
