package keystore

import (
	"encoding/binary"
	"errors"
	"net/http"
	"sync"
	"time"
	"unsafe"
)

// memEntry is how Memory holds a record: the fields its checks read, and
// the whole record encoded by encodeMemRecord in one byte slice. A
// retained *Record is a graph of maps, slices and strings that every
// garbage collection walks; the encoded slice holds no pointers, so the
// collector scans nothing inside it.
type memEntry struct {
	memHead
	data []byte
	// locs are the zones of times that are neither UTC nor Local, which
	// time's binary form keeps only as an offset; nil in the usual case.
	locs []*time.Location
	// live, when set, is the record itself as AdoptCreate took it over,
	// and data is empty: a record created and soon settled is encoded
	// once, when its update replaces the entry.
	live *Record
}

// Bits of a memRecord's flags: nil and empty are kept apart where Clone
// keeps them apart, so a record reads back as Clone would have copied it.
const (
	memHeaderSet uint64 = 1 << iota
	memResponseSet
	memResponseHeaderSet
	memSecretsSet
	memReconciliationsSet
	memMayHaveExecuted
)

// encodeMemRecord writes r as one byte slice: flags, then every field in
// declaration order, strings and bodies prefixed by their length.
func encodeMemRecord(r *Record) memEntry {
	e := memEntry{memHead: headOf(r)}
	var flags uint64
	if r.Header != nil {
		flags |= memHeaderSet
	}
	if r.Response != nil {
		flags |= memResponseSet
		if r.Response.Header != nil {
			flags |= memResponseHeaderSet
		}
	}
	// Clone makes empty lists nil, and so does the decoder.
	if len(r.SecretHeaders) > 0 {
		flags |= memSecretsSet
	}
	if len(r.Reconciliations) > 0 {
		flags |= memReconciliationsSet
	}
	if r.MayHaveExecuted {
		flags |= memMayHaveExecuted
	}
	// Written into a scratch buffer in one pass, then copied out at its
	// length: the copy costs less than a pass to size the record first.
	scratch := memScratch.Get().(*[]byte)
	b := (*scratch)[:0]
	b = binary.AppendUvarint(b, flags)
	b = appendMemString(b, r.Key)
	b = appendMemString(b, r.Name)
	b = appendMemString(b, r.Method)
	b = appendMemString(b, r.URL)
	b = appendMemHeader(b, r.Header)
	b = appendMemString(b, unsafe.String(unsafe.SliceData(r.Body), len(r.Body)))
	b = appendMemString(b, r.Fingerprint)
	b = appendMemString(b, string(r.State))
	b = e.appendTime(b, r.CreatedAt)
	b = e.appendTime(b, r.UpdatedAt)
	b = binary.AppendVarint(b, int64(r.Attempts))
	if resp := r.Response; resp != nil {
		b = binary.AppendVarint(b, int64(resp.Status))
		b = appendMemHeader(b, resp.Header)
		b = appendMemString(b, unsafe.String(unsafe.SliceData(resp.Body), len(resp.Body)))
	}
	b = appendMemString(b, r.Operation)
	b = appendMemString(b, r.LastError)
	b = appendMemString(b, r.Host)
	b = e.appendTime(b, r.AcceptedAt)
	b = appendMemString(b, r.Principal)
	b = binary.AppendUvarint(b, uint64(len(r.SecretHeaders)))
	b = appendMemStrings(b, r.SecretHeaders...)
	b = binary.AppendUvarint(b, uint64(len(r.Reconciliations)))
	for _, v := range r.Reconciliations {
		b = appendMemString(b, v.Outcome)
		b = appendMemString(b, v.Source)
		b = appendMemString(b, v.By)
		b = e.appendTime(b, v.At)
		b = appendMemString(b, v.Note)
	}
	b = e.appendTime(b, r.Purged)
	e.data = append([]byte(nil), b...) // kept as long as the record: no spare room
	if cap(b) <= memScratchMax {
		*scratch = b
		memScratch.Put(scratch)
	}
	return e
}

// memScratch holds the buffers encodeMemRecord writes into; one that grew
// past memScratchMax (a record with a large body) is left to the collector.
var memScratch = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const memScratchMax = 64 << 10

func appendMemString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendMemStrings(b []byte, ss ...string) []byte {
	for _, s := range ss {
		b = appendMemString(b, s)
	}
	return b
}

// appendMemHeader writes the name count, the value count (total, four
// bytes set once the values are written), then each name and its values,
// a nil value list (count 0) apart from an empty one (count 1). The value
// count lets the decoder put all values in one slice, as Header.Clone
// does.
func appendMemHeader(b []byte, h http.Header) []byte {
	b = binary.AppendUvarint(b, uint64(len(h)))
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	total := 0
	for name, values := range h {
		b = appendMemString(b, name)
		if values == nil {
			b = binary.AppendUvarint(b, 0)
			continue
		}
		total += len(values)
		b = binary.AppendUvarint(b, uint64(len(values))+1)
		b = appendMemStrings(b, values...)
	}
	binary.LittleEndian.PutUint32(b[at:], uint32(total))
	return b
}

// appendTime keeps the instant and its offset (time's own binary form),
// then 0 for a UTC or Local time, or 1+ the index of its zone in e.locs.
// The monotonic reading is dropped, as every store drops it.
func (e *memEntry) appendTime(b []byte, t time.Time) []byte {
	out, err := t.AppendBinary(b)
	if err != nil { // an offset time cannot encode: keep the instant in UTC
		out, _ = t.UTC().AppendBinary(b)
		return append(out, 0)
	}
	if loc := t.Location(); loc != time.UTC && loc != time.Local {
		e.locs = append(e.locs, loc)
		return binary.AppendUvarint(out, uint64(len(e.locs)))
	}
	return append(out, 0)
}

// errMemRecord means bytes encodeMemRecord did not write; Memory only
// decodes what it encoded, so it is never expected.
var errMemRecord = errors.New("keystore: damaged in-memory record")

// decodeMemRecord reverses encodeMemRecord. Strings point into data,
// which the store never modifies (it replaces an entry, never edits it);
// bodies and maps are the caller's own.
func decodeMemRecord(e memEntry) (*Record, error) {
	d := memDecoder{b: e.data, locs: e.locs}
	flags := d.uvarint()
	r := &Record{Key: d.string(), Name: d.string(), Method: d.string(), URL: d.string()}
	r.Header = d.header(flags&memHeaderSet != 0)
	r.Body = d.body()
	r.Fingerprint, r.State = d.string(), State(d.string())
	r.CreatedAt, r.UpdatedAt = d.time(), d.time()
	r.Attempts = int(d.varint())
	if flags&memResponseSet != 0 {
		r.Response = &Response{Status: int(d.varint())}
		r.Response.Header = d.header(flags&memResponseHeaderSet != 0)
		r.Response.Body = d.body()
	}
	r.Operation, r.LastError, r.Host = d.string(), d.string(), d.string()
	r.AcceptedAt = d.time()
	r.Principal = d.string()
	if n := d.count(); flags&memSecretsSet != 0 {
		r.SecretHeaders = make([]string, n)
		for i := range r.SecretHeaders {
			r.SecretHeaders[i] = d.string()
		}
	}
	if n := d.count(); flags&memReconciliationsSet != 0 {
		r.Reconciliations = make([]Reconciliation, n)
		for i := range r.Reconciliations {
			v := &r.Reconciliations[i]
			v.Outcome, v.Source, v.By = d.string(), d.string(), d.string()
			v.At, v.Note = d.time(), d.string()
		}
	}
	r.MayHaveExecuted = flags&memMayHaveExecuted != 0
	r.Purged = d.time()
	if d.err != nil || len(d.b) != 0 {
		return nil, errMemRecord
	}
	return r, nil
}

// memDecoder reads the fields encodeMemRecord wrote; after the first error
// every read returns a zero value and err stays set.
type memDecoder struct {
	b    []byte
	locs []*time.Location
	err  error
}

func (d *memDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errMemRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *memDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errMemRecord
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length that cannot exceed what is left (each item takes
// at least a byte), so damage never allocates more than the record holds.
func (d *memDecoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errMemRecord
		return 0
	}
	return int(n)
}

// fixedCount is count written in four bytes.
func (d *memDecoder) fixedCount() int {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.err = errMemRecord
		return 0
	}
	n := binary.LittleEndian.Uint32(d.b)
	d.b = d.b[4:]
	if uint64(n) > uint64(len(d.b)) {
		d.err = errMemRecord
		return 0
	}
	return int(n)
}

func (d *memDecoder) raw() []byte {
	n := d.count()
	if d.err != nil {
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

func (d *memDecoder) string() string {
	s := d.raw()
	return unsafe.String(unsafe.SliceData(s), len(s))
}

// body copies, and an empty body reads back nil, as Clone makes it.
func (d *memDecoder) body() []byte {
	s := d.raw()
	if len(s) == 0 {
		return nil
	}
	return append([]byte(nil), s...)
}

func (d *memDecoder) header(set bool) http.Header {
	n, total := d.count(), d.fixedCount()
	if !set {
		return nil
	}
	h := make(http.Header, n)
	all := make([]string, total)
	for range n {
		name := d.string()
		count := d.uvarint()
		if d.err != nil {
			return h
		}
		if count == 0 {
			h[name] = nil
			continue
		}
		if count-1 > uint64(len(all)) {
			d.err = errMemRecord
			return h
		}
		values := all[: count-1 : count-1]
		all = all[count-1:]
		for i := range values {
			values[i] = d.string()
		}
		h[name] = values
	}
	return h
}

func (d *memDecoder) time() time.Time {
	if d.err != nil || len(d.b) == 0 {
		d.err = errMemRecord
		return time.Time{}
	}
	// time's binary form: a version byte, 8 bytes of seconds, 4 of
	// nanoseconds, 2 of zone offset, and 1 more with version 2.
	size := 15
	if d.b[0] == 2 {
		size = 16
	}
	var t time.Time
	if len(d.b) < size || t.UnmarshalBinary(d.b[:size]) != nil {
		d.err = errMemRecord
		return time.Time{}
	}
	d.b = d.b[size:]
	if i := d.uvarint(); i > 0 {
		if i > uint64(len(d.locs)) {
			d.err = errMemRecord
			return time.Time{}
		}
		t = t.In(d.locs[i-1])
	}
	return t
}
