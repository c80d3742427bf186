package keystore

import (
	"encoding/base64"
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecordJSON appends to dst the bytes json.Marshal(r) gives, written
// by hand: Marshal's reflection is most of the cost of a bbolt write. The
// field order, names, omitempty and omitzero rules are Record's tags; maps
// are written with sorted keys, nil slices as null, []byte as padded
// standard base64 and strings escaped as encoding/json escapes them (HTML
// characters, U+2028, U+2029, invalid UTF-8 as \ufffd).
//
// ok is false when r holds a time that time.Time.MarshalJSON refuses (a
// year outside 0–9999, an offset of 24 hours or more): the caller then
// calls json.Marshal, which reports the error. TestRecordJSONFields fails
// when a field is added to Record, Response or Reconciliation that this
// function does not write.
func appendRecordJSON(dst []byte, r *Record) ([]byte, bool) {
	ok := true
	dst = append(dst, `{"key":`...)
	dst = appendJSONString(dst, r.Key)
	if r.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendJSONString(dst, r.Name)
	}
	dst = append(dst, `,"method":`...)
	dst = appendJSONString(dst, r.Method)
	dst = append(dst, `,"url":`...)
	dst = appendJSONString(dst, r.URL)
	if len(r.Header) > 0 {
		dst = append(dst, `,"header":`...)
		dst = appendJSONHeader(dst, r.Header)
	}
	if len(r.Body) > 0 {
		dst = append(dst, `,"body":`...)
		dst = appendJSONBytes(dst, r.Body)
	}
	dst = append(dst, `,"fingerprint":`...)
	dst = appendJSONString(dst, r.Fingerprint)
	dst = append(dst, `,"state":`...)
	dst = appendJSONString(dst, string(r.State))
	dst = append(dst, `,"created_at":`...)
	if dst, ok = appendJSONTime(dst, r.CreatedAt); !ok {
		return dst, false
	}
	dst = append(dst, `,"updated_at":`...)
	if dst, ok = appendJSONTime(dst, r.UpdatedAt); !ok {
		return dst, false
	}
	dst = append(dst, `,"attempts":`...)
	dst = strconv.AppendInt(dst, int64(r.Attempts), 10)
	if resp := r.Response; resp != nil {
		dst = append(dst, `,"response":{"status":`...)
		dst = strconv.AppendInt(dst, int64(resp.Status), 10)
		if len(resp.Header) > 0 {
			dst = append(dst, `,"header":`...)
			dst = appendJSONHeader(dst, resp.Header)
		}
		if len(resp.Body) > 0 {
			dst = append(dst, `,"body":`...)
			dst = appendJSONBytes(dst, resp.Body)
		}
		dst = append(dst, '}')
	}
	if r.Operation != "" {
		dst = append(dst, `,"operation":`...)
		dst = appendJSONString(dst, r.Operation)
	}
	if r.LastError != "" {
		dst = append(dst, `,"last_error":`...)
		dst = appendJSONString(dst, r.LastError)
	}
	if r.Host != "" {
		dst = append(dst, `,"host":`...)
		dst = appendJSONString(dst, r.Host)
	}
	if !r.AcceptedAt.IsZero() {
		dst = append(dst, `,"accepted_at":`...)
		if dst, ok = appendJSONTime(dst, r.AcceptedAt); !ok {
			return dst, false
		}
	}
	if r.Principal != "" {
		dst = append(dst, `,"principal":`...)
		dst = appendJSONString(dst, r.Principal)
	}
	if len(r.SecretHeaders) > 0 {
		dst = append(dst, `,"secret_headers":`...)
		dst = appendJSONStrings(dst, r.SecretHeaders)
	}
	if r.MayHaveExecuted {
		dst = append(dst, `,"may_have_executed":true`...)
	}
	if len(r.Reconciliations) > 0 {
		dst = append(dst, `,"reconciliations":[`...)
		for i := range r.Reconciliations {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendJSONReconciliation(dst, &r.Reconciliations[i]); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	if !r.Purged.IsZero() {
		dst = append(dst, `,"purged_at":`...)
		if dst, ok = appendJSONTime(dst, r.Purged); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// appendJSONReconciliation appends json.Marshal(v); ok as appendJSONTime.
func appendJSONReconciliation(dst []byte, v *Reconciliation) ([]byte, bool) {
	dst = append(dst, `{"outcome":`...)
	dst = appendJSONString(dst, v.Outcome)
	dst = append(dst, `,"source":`...)
	dst = appendJSONString(dst, v.Source)
	if v.By != "" {
		dst = append(dst, `,"by":`...)
		dst = appendJSONString(dst, v.By)
	}
	dst = append(dst, `,"at":`...)
	dst, ok := appendJSONTime(dst, v.At)
	if !ok {
		return dst, false
	}
	if v.Note != "" {
		dst = append(dst, `,"note":`...)
		dst = appendJSONString(dst, v.Note)
	}
	return append(dst, '}'), true
}

// appendJSONTime appends t.MarshalJSON(): AppendText is the same strict
// RFC 3339 form with nanoseconds, without the allocation. ok is false
// when t has no such form.
func appendJSONTime(dst []byte, t time.Time) ([]byte, bool) {
	dst = append(dst, '"')
	out, err := t.AppendText(dst)
	if err != nil {
		return dst, false
	}
	return append(out, '"'), true
}

// appendJSONBytes appends a non-nil []byte as encoding/json does.
func appendJSONBytes(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

// headerSortSize is how many header names are sorted without an
// allocation; a larger header still encodes, with one.
const headerSortSize = 16

// appendJSONHeader appends a non-empty header as encoding/json writes a
// map: names sorted bytewise, each value a string array (null when nil).
func appendJSONHeader(dst []byte, h http.Header) []byte {
	var buf [headerSortSize]string
	names := buf[:0]
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, k := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		dst = appendJSONStrings(dst, h[k])
	}
	return append(dst, '}')
}

// appendJSONStrings appends a []string: null when nil, else an array.
func appendJSONStrings(dst []byte, vs []string) []byte {
	if vs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, v)
	}
	return append(dst, ']')
}

// jsonSafe marks the ASCII bytes encoding/json writes as they are with
// HTML escaping on (its htmlSafeSet): printable, not ", \, <, > or &.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = true
	}
	for _, b := range `"\<>&` {
		t[b] = false
	}
	return t
}()

const jsonHex = "0123456789abcdef"

// appendJSONString appends s quoted and escaped exactly as json.Marshal
// quotes a string (encoding/json's appendString with escapeHTML).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if jsonSafe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsonHex[b>>4], jsonHex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', jsonHex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// recordJSONSize estimates the length of r's JSON, so the encoding is
// one allocation for most records: the strings as they are, base64 of the
// bodies, and a margin for names, punctuation and times.
func recordJSONSize(r *Record) int {
	n := 320 + len(r.Key) + len(r.Name) + len(r.Method) + len(r.URL) +
		len(r.Fingerprint) + len(r.State) + len(r.Operation) + len(r.LastError) +
		len(r.Host) + len(r.Principal) + base64.StdEncoding.EncodedLen(len(r.Body)) +
		headerJSONSize(r.Header)
	for _, s := range r.SecretHeaders {
		n += len(s) + 3
	}
	if resp := r.Response; resp != nil {
		n += 48 + headerJSONSize(resp.Header) + base64.StdEncoding.EncodedLen(len(resp.Body))
	}
	for i := range r.Reconciliations {
		v := &r.Reconciliations[i]
		n += 96 + len(v.Outcome) + len(v.Source) + len(v.By) + len(v.Note)
	}
	return n
}

// headerJSONSize estimates the JSON length of h.
func headerJSONSize(h http.Header) int {
	n := 2
	for k, vs := range h {
		n += len(k) + 6
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	return n
}
